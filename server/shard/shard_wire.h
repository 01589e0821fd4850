#pragma once
// The shard protocol's messages (api/proto/sparrow/shard/v1/shard.proto) to and from the
// engine's types. Decoding checks sizes, since the bytes come from the network.
#include <span>
#include <string>
#include <vector>

#include "engine/common/result.h"
#include "engine/runtime/remote_layers.h"
#include "engine/shard/kv_block_op.h"
#include "engine/shard/shard_bounds.h"
#include "sparrow/shard/v1/shard.pb.h"

namespace sparrow::server {

namespace shardpb = ::sparrow::shard::v1;

// The HTTP/2 stream window both ends of a shard stream announce: room for a few micro-batches'
// hidden states, so that neither side's writes wait for the other's compute.
constexpr int kShardWindowBytes = 8 << 20;
// The longest a coordinator's channel to a worker waits between connection attempts.
constexpr int kShardReconnectMs = 1000;

// "f32", "f16" or "q8_0"; InvalidArgument naming the setting otherwise ("auto" is the caller's:
// EncodingForLink per link).
Result<shardpb::Encoding> ParseShardEncoding(const std::string& name);

// shard_encoding auto: f32 (exact) on a link of a gigabit or more; below, where the transfers
// of a prompt's hidden states start to cost (bench/RESULTS.md: q8_0 lifted prefill 1.2-1.7x at
// 10-300 Mbit/s and left decode as it was), q8_0, or f16 when n_embd is not a multiple of 32.
shardpb::Encoding EncodingForLink(double link_mbps, int64_t n_embd);
std::string_view EncodingName(shardpb::Encoding e);

void EncodeHidden(std::span<const float> hidden, shardpb::Encoding encoding, std::string* out);
// `expected` floats from `bytes`; InvalidArgument when the size is not theirs.
Status DecodeHidden(const std::string& bytes, shardpb::Encoding encoding, size_t expected,
                    std::span<float> out);

void OpToProto(const KvBlockOp& op, shardpb::BlockOp* out);
Result<KvBlockOp> OpFromProto(const shardpb::BlockOp& op);

// The largest message either end of a shard stream accepts for a model of n_embd: a step of
// kMaxStepTokens in f32 with room for its block tables (64 MiB), or Echo's 16 MiB; at most
// 1 GiB. A worker reads none of a call's messages before its key is checked (WorkerKeyCheck).
int ShardMaxMessageBytes(int64_t n_embd);

// The assignment as sent (CheckAssignment is the runner's).
ShardAssignment AssignmentFromProto(const shardpb::Assign& as);

// A step's block ops and segments (views into `step`, which must outlive them), refused when it
// carries more than kMaxStepTokens tokens.
struct DecodedStep {
  std::vector<KvBlockOp> ops;
  std::vector<StageSegment> segments;
  size_t tokens = 0;
};
Status DecodeStep(const shardpb::Step& step, DecodedStep* out);

}  // namespace sparrow::server
