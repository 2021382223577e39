// Twitter Snowflake's Thrift service, as snowidd serves it on its optional
// Thrift listener (framed transport, binary protocol) so that clients built
// for Twitter's service switch by changing the address. Wire-identical to
// Twitter's service: the service, method and exception names, the field ids
// and the types must never change. The namespaces only name the generated
// code and are not on the wire.
//
// One method is snowid's own, added after Twitter's four: authenticate.
// Adding a method changes nothing on the wire for the others, so clients
// built for Twitter's service keep working; a client generated from this
// file can call it to send the bearer token (see below).
//
// The methods declare no exceptions: a refusal reaches a client as a Thrift
// application exception whose message starts with the name of the exception
// below that Twitter's service raised for it (InvalidUserAgentError: the
// agent; InvalidSystemClock: no ID can be issued now), then the reason.

namespace cpp snowid.thrift
namespace py snowid_snowflake

// The server's clock reads behind the last ID it issued (or, in snowid, no
// ID can be issued for another reason the message gives).
exception InvalidSystemClock {
  1: string message,
}

// The useragent of get_id is not [a-zA-Z][a-zA-Z0-9-]* (at most 64 chars).
exception InvalidUserAgentError {
  1: string message,
}

service Snowflake {
  // snowid's own: with bearer_token set, a connection from outside
  // thrift_trusted_networks calls this first, with the token; until then
  // every other call is refused with "Unauthenticated: ..." and the
  // connection is closed if it has not authenticated within
  // thrift_auth_timeout_ms. A wrong token is refused the same way (the
  // connection stays open). Without a token set, any token is accepted.
  void authenticate(1: string token)
  // The node's worker id under its layout.
  i64 get_worker_id()
  // The server's clock, Unix milliseconds (peers compare clocks with it).
  i64 get_timestamp()
  // One new ID, counted for `useragent`.
  i64 get_id(1: string useragent)
  // The node's datacenter id under its layout.
  i64 get_datacenter_id()
}
