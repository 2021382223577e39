#include "opaque_commands.h"

#include <cstdio>

#include "exit_codes.h"
#include "snowid/id_encoding.h"
#include "snowid/opaque_id.h"

namespace snowid::cli {

OpaqueCommands::OpaqueCommands(CLI::App& app) {
  encode_ = app.add_subcommand("encode",
                               "Print Snowflake IDs in fixed-width text that sorts as the IDs do");
  encode_->add_option("ids", ids_, "Decimal Snowflake IDs")->required();
  encode_->add_option("--encoding", encoding_, "hex, base32, base58, base62 or decimal")
      ->required();

  auto* opaque = app.add_subcommand(
      "opaque", "Map Snowflake IDs to opaque IDs and back under a key (a keyed permutation)");
  opaque->require_subcommand(1);
  opaque_encode_ = opaque->add_subcommand("encode", "Print the opaque ID of each Snowflake ID");
  opaque_encode_->add_option("ids", ids_, "Decimal Snowflake IDs")->required();
  opaque_decode_ =
      opaque->add_subcommand("decode", "Print the Snowflake ID of each opaque ID, in decimal");
  opaque_decode_->add_option("ids", ids_, "Opaque IDs, in --encoding")->required();
  for (CLI::App* sub : {opaque_encode_, opaque_decode_}) {
    sub->add_option("--key-file", key_file_,
                    "File holding the key (at least 16 bytes; a final newline is not part of it)")
        ->required();
    sub->add_option("--encoding", encoding_,
                    "Text of the opaque IDs: decimal, hex, base32, base58 or base62")
        ->default_str("decimal");
  }
}

bool OpaqueCommands::parsed() const {
  return encode_->parsed() || opaque_encode_->parsed() || opaque_decode_->parsed();
}

int OpaqueCommands::run() const {
  auto encoding = parse_id_encoding(encoding_);
  if (!encoding.ok()) return report_error(encoding.error());
  // Every ID is read before any is printed: bad input prints nothing.
  std::vector<Id> ids;
  const IdEncoding input = opaque_decode_->parsed() ? *encoding : IdEncoding::kDecimal;
  for (const std::string& text : ids_) {
    auto id = decode_id(text, input);
    if (!id.ok()) return report_error(id.error());
    ids.push_back(*id);
  }
  IdEncoding output = *encoding;
  if (!encode_->parsed()) {
    auto opaque = OpaqueIds::from_key_file(key_file_);
    if (!opaque.ok()) {
      return report_error(invalid_argument("--key-file " + opaque.error().message));
    }
    for (Id& id : ids) {
      auto mapped =
          opaque_decode_->parsed() ? (*opaque)->from_opaque(id) : (*opaque)->to_opaque(id);
      if (!mapped.ok()) return report_error(mapped.error());
      id = *mapped;
    }
    if (opaque_decode_->parsed()) output = IdEncoding::kDecimal;
  }
  for (Id id : ids) std::printf("%s\n", encode_id(id, output).c_str());
  return 0;
}

}  // namespace snowid::cli
