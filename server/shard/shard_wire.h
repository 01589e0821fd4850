#pragma once
// The shard protocol's messages (api/proto/sparrow/shard/v1/shard.proto) to and from the
// engine's types. Decoding checks sizes, since the bytes come from the network.
#include <span>
#include <string>
#include <vector>

#include "engine/common/result.h"
#include "engine/runtime/remote_layers.h"
#include "engine/shard/kv_block_op.h"
#include "sparrow/shard/v1/shard.pb.h"

namespace sparrow::server {

namespace shardpb = ::sparrow::shard::v1;

// The HTTP/2 stream window both ends of a shard stream announce: room for a few micro-batches'
// hidden states, so that neither side's writes wait for the other's compute.
constexpr int kShardWindowBytes = 8 << 20;
// The longest a coordinator's channel to a worker waits between connection attempts.
constexpr int kShardReconnectMs = 1000;

// "f32" or "f16"; InvalidArgument naming the setting otherwise.
Result<shardpb::Encoding> ParseShardEncoding(const std::string& name);

void EncodeHidden(std::span<const float> hidden, shardpb::Encoding encoding, std::string* out);
// `expected` floats from `bytes`; InvalidArgument when the size is not theirs.
Status DecodeHidden(const std::string& bytes, shardpb::Encoding encoding, size_t expected,
                    std::span<float> out);

void OpToProto(const KvBlockOp& op, shardpb::BlockOp* out);
Result<KvBlockOp> OpFromProto(const shardpb::BlockOp& op);

}  // namespace sparrow::server
