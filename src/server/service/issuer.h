// This process's issuer token: 16 lower-case hex digits drawn once per
// start, sent with every batch a node answers (HTTP header Snowid-Issuer,
// gRPC initial metadata snowid-issuer on NextIds and NextSegmentIds).
//
// Invariant a client may rely on: every batch one process answers lies above
// the batch it answered before, per tag (Snowflake IDs: the empty tag), for
// as long as it runs; a restart draws another token. A client that goes
// through a proxy in front of several nodes thus holds each node's batches
// above its last (docs/clients.md, "What a client accepts").
//
// Thread-safety: any thread; the token is made on the first call.
#pragma once

#include <string>
#include <string_view>

namespace snowid::server {

std::string_view issuer_token();

// The issuer of one answer: issuer_token() if every batch of its kind from
// this process lies above the one before (`batches_rise`), else a token of
// that answer alone ("<token>-<n>"), which promises nothing beyond it: a
// ticket-server set's members hand out their ranges in turn.
std::string answer_issuer(bool batches_rise);

}  // namespace snowid::server
