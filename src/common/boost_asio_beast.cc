// Boost.Asio's and Boost.Beast's compiled parts, once for the whole program.
// Every target that links snowid_asio is built with
// BOOST_ASIO_SEPARATE_COMPILATION and BOOST_BEAST_SEPARATE_COMPILATION, so
// the non-template code of the two libraries (the reactor, sockets, TLS,
// the HTTP parser) is compiled here alone instead of in every file that
// includes them: a large part of what those files cost to build.
#include <boost/asio/impl/src.hpp>
#include <boost/asio/ssl/impl/src.hpp>
#include <boost/beast/src.hpp>
