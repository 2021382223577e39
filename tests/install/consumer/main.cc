// Issues three IDs as node 3/7 of the twitter layout and prints each with
// its decoded node fields: "<id> <datacenter>/<worker>", one per line.
#include <cstdio>
#include <memory>

#include "snowid/decode.h"
#include "snowid/generator.h"

int main() {
  snowid::GeneratorOptions options;
  options.datacenter_id = 3;
  options.worker_id = 7;
  auto generator = snowid::Generator::create(options);
  if (!generator.ok()) {
    std::fprintf(stderr, "%s\n", generator.error().message.c_str());
    return 1;
  }
  for (int i = 0; i < 3; ++i) {
    auto id = (*generator)->next();
    if (!id.ok()) {
      std::fprintf(stderr, "%s\n", id.error().message.c_str());
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
