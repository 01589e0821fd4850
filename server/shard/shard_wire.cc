#include "server/shard/shard_wire.h"

#include <algorithm>
#include <cstring>

#include "engine/common/check.h"
#include "engine/common/result.h"
#include "engine/kernels/dequantize.h"
#include "engine/kernels/fp16.h"
#include "engine/kernels/quantize.h"

namespace sparrow::server {

Result<shardpb::Encoding> ParseShardEncoding(const std::string& name) {
  if (name == "f32") return shardpb::ENCODING_F32;
  if (name == "f16") return shardpb::ENCODING_F16;
  if (name == "q8_0") return shardpb::ENCODING_Q8_0;
  return InvalidArgument("config: 'shard_encoding' must be f32, f16 or q8_0, got '" + name + "'");
}

shardpb::Encoding EncodingForLink(double link_mbps, int64_t n_embd) {
  if (link_mbps >= 1000) return shardpb::ENCODING_F32;
  return n_embd % 32 == 0 ? shardpb::ENCODING_Q8_0 : shardpb::ENCODING_F16;
}

std::string_view EncodingName(shardpb::Encoding e) {
  return e == shardpb::ENCODING_F16 ? "f16" : e == shardpb::ENCODING_Q8_0 ? "q8_0" : "f32";
}

namespace {

constexpr size_t kQ8Block = 32, kQ8BlockBytes = 34;

}  // namespace

void EncodeHidden(std::span<const float> hidden, shardpb::Encoding encoding, std::string* out) {
  if (encoding == shardpb::ENCODING_Q8_0) {
    // ConnectWorkers refuses q8_0 for a model whose n_embd is not a multiple of 32.
    SPARROW_CHECK(hidden.size() % kQ8Block == 0);
    out->resize(hidden.size() / kQ8Block * kQ8BlockBytes);
    kernels::QuantizeRow(TensorType::kQ8_0, hidden.data(), out->data(),
                         static_cast<int64_t>(hidden.size()));
    return;
  }
  if (encoding == shardpb::ENCODING_F16) {
    out->resize(hidden.size() * 2);
    auto* p = reinterpret_cast<uint8_t*>(out->data());
    for (size_t i = 0; i < hidden.size(); ++i) {
      const uint16_t h = kernels::Fp32ToFp16(hidden[i]);
      std::memcpy(p + 2 * i, &h, 2);
    }
    return;
  }
  out->assign(reinterpret_cast<const char*>(hidden.data()), hidden.size() * sizeof(float));
}

Status DecodeHidden(const std::string& bytes, shardpb::Encoding encoding, size_t expected,
                    std::span<float> out) {
  // Sizes below 2^60 values: no product below overflows.
  if (expected > (size_t{1} << 60)) {
    return InvalidArgument("a hidden state of " + std::to_string(expected) + " values");
  }
  size_t want = 0;
  switch (encoding) {
    case shardpb::ENCODING_F32:
      want = expected * sizeof(float);
      break;
    case shardpb::ENCODING_F16:
      want = expected * 2;
      break;
    case shardpb::ENCODING_Q8_0:
      if (expected % kQ8Block != 0) {
        return InvalidArgument("a q8_0 hidden state of " + std::to_string(expected) +
                               " values, not a multiple of " + std::to_string(kQ8Block));
      }
      want = expected / kQ8Block * kQ8BlockBytes;
      break;
    default:
      return InvalidArgument("hidden state encoding " + std::to_string(encoding) + " is unknown");
  }
  if (bytes.size() != want || out.size() != expected) {
    return InvalidArgument("hidden state of " + std::to_string(bytes.size()) + " bytes where " +
                           std::to_string(want) + " bytes for " + std::to_string(expected) +
                           " values were expected");
  }
  // Nothing to copy: an empty span's data() may be null, which memcpy must not get (found by
  // shard_wire_fuzz).
  if (expected == 0) return Status::Ok();
  if (encoding == shardpb::ENCODING_F32) {
    std::memcpy(out.data(), bytes.data(), bytes.size());
  } else if (encoding == shardpb::ENCODING_Q8_0) {
    kernels::DequantizeRow(TensorType::kQ8_0, bytes.data(), out.data(),
                           static_cast<int64_t>(expected));
  } else {
    const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
    for (size_t i = 0; i < expected; ++i) {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      out[i] = kernels::Fp16ToFp32(h);
    }
  }
  return Status::Ok();
}

void OpToProto(const KvBlockOp& op, shardpb::BlockOp* out) {
  if (op.kind == KvBlockOp::Kind::kResize) {
    out->set_resize(op.n_blocks);
  } else {
    out->mutable_copy()->set_src(op.src);
    out->mutable_copy()->set_dst(op.dst);
  }
}

Result<KvBlockOp> OpFromProto(const shardpb::BlockOp& op) {
  if (op.has_copy()) return KvBlockOp{KvBlockOp::Kind::kCopy, op.copy().src(), op.copy().dst(), 0};
  if (op.op_case() == shardpb::BlockOp::kResize) {
    return KvBlockOp{KvBlockOp::Kind::kResize, 0, 0, op.resize()};
  }
  return InvalidArgument("a block op that is neither a copy nor a resize");
}

int ShardMaxMessageBytes(int64_t n_embd) {
  constexpr int64_t kTables = int64_t{64} << 20, kEcho = int64_t{17} << 20, kMax = int64_t{1} << 30;
  if (n_embd <= 0 || n_embd > kMax) return static_cast<int>(kMax);
  const int64_t step = kMaxStepTokens * n_embd * static_cast<int64_t>(sizeof(float)) + kTables;
  return static_cast<int>(std::min(kMax, std::max(step, kEcho)));
}

ShardAssignment AssignmentFromProto(const shardpb::Assign& as) {
  ShardAssignment a{
      as.first_layer(),
      as.end_layer(),
      as.kv_block_size(),
      as.kv_blocks(),
      std::nullopt,
      {static_cast<TensorType>(as.kv_type_k()), static_cast<TensorType>(as.kv_type_v())}};
  if (as.has_slice()) {
    const shardpb::TensorSlice& s = as.slice();
    a.slice = TensorSlice{s.kv_head_begin(), s.kv_head_end(), s.ff_begin(), s.ff_end()};
  }
  return a;
}

Status DecodeStep(const shardpb::Step& step, DecodedStep* out) {
  out->ops.clear();
  out->segments.clear();
  out->tokens = 0;
  for (const auto& op : step.ops()) {
    SPARROW_ASSIGN_OR_RETURN(KvBlockOp o, OpFromProto(op));
    out->ops.push_back(o);
  }
  for (const auto& s : step.segments()) {
    const auto n = static_cast<size_t>(s.tokens_size());
    // Each count is below 2^31 and the sum is checked as it grows: no overflow.
    if (n > static_cast<size_t>(kMaxStepTokens) - out->tokens) {
      return InvalidArgument("a step of more than " + std::to_string(kMaxStepTokens) + " tokens");
    }
    out->tokens += n;
    out->segments.push_back({{s.tokens().data(), n},
                             s.start_pos(),
                             {s.blocks().data(), static_cast<size_t>(s.blocks_size())}});
  }
  return Status::Ok();
}

}  // namespace sparrow::server
