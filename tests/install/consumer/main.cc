// Issues three IDs as node 3/7 of the twitter layout and prints each with
// its decoded node fields: "<id> <datacenter>/<worker>", one per line. The
// node id comes from a static coordinator's claim, as snowidd's does. Each
// ID also goes through an opaque ID and base58 text and back, so that the
// link needs what snowid::core links privately (libcrypto).
#include <cstdio>
#include <memory>
#include <string>

#include "snowid/coordinator.h"
#include "snowid/decode.h"
#include "snowid/generator.h"
#include "snowid/id_encoding.h"
#include "snowid/opaque_id.h"

int main() {
  snowid::GeneratorOptions options;
  auto coordinator = snowid::make_static_coordinator(options.layout, 3, 7);
  if (!coordinator.ok()) {
    std::fprintf(stderr, "%s\n", coordinator.error().message.c_str());
    return 1;
  }
  auto claim = (*coordinator)->claim();
  if (!claim.ok()) {
    std::fprintf(stderr, "%s\n", claim.error().message.c_str());
    return 1;
  }
  options.datacenter_id = claim->datacenter_id;
  options.worker_id = claim->worker_id;
  auto generator = snowid::Generator::create(options);
  if (!generator.ok()) {
    std::fprintf(stderr, "%s\n", generator.error().message.c_str());
    return 1;
  }
  auto opaque = snowid::OpaqueIds::create("consumer key of sixteen bytes");
  if (!opaque.ok()) {
    std::fprintf(stderr, "%s\n", opaque.error().message.c_str());
    return 1;
  }
  for (int i = 0; i < 3; ++i) {
    auto id = (*generator)->next();
    if (!id.ok()) {
      std::fprintf(stderr, "%s\n", id.error().message.c_str());
      return 1;
    }
    auto hidden = (*opaque)->to_opaque(*id);
    const std::string text = snowid::encode_id(*hidden, snowid::IdEncoding::kBase58);
    auto back = (*opaque)->from_opaque(*snowid::decode_id(text, snowid::IdEncoding::kBase58));
    if (!back.ok() || *back != *id) {
      std::fprintf(stderr, "opaque ID %s does not map back to %lld\n", text.c_str(),
                   static_cast<long long>(*id));
      return 1;
    }
    auto fields = snowid::decode(options.layout, *id);
    if (!fields.ok()) {
      std::fprintf(stderr, "%s\n", fields.error().message.c_str());
      return 1;
    }
    std::printf("%lld %llu/%llu\n", static_cast<long long>(*id),
                static_cast<unsigned long long>(fields->datacenter),
                static_cast<unsigned long long>(fields->worker));
  }
  return 0;
}
