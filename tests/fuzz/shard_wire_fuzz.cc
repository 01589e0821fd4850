// libFuzzer target for what a shard worker does with the bytes of its coordinator's stream
// before any model computation: each record (2 bytes of length, little-endian, then a
// StageRequest) is parsed, the first as the assignment (its range and pool checked, the mirrored
// pool made), the rest as steps (block ops applied to the pool, segments range-checked, every
// position they name written through the block table, the hidden state decoded), and the record
// also read as a coordinator reads an answer. ASan catches an index the checks let through;
// a refusal that is not InvalidArgument aborts.
// SHARD_FUZZ_SEEDS=<dir>: writes a few valid sessions there and exits (run_shard_fuzz.sh).
#include <google/protobuf/stubs/logging.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "engine/shard/mirrored_kv_blocks.h"
#include "engine/shard/shard_bounds.h"
#include "server/shard/shard_wire.h"

namespace {

namespace shardpb = ::sparrow::shard::v1;
using sparrow::Status;

// A model's shape as the worker checks against it (small: a pool of big blocks is the
// allocation the limits allow, not a bug).
constexpr int64_t kLayers = 2, kEmbd = 64, kVocab = 512, kKvDim = 2;

[[noreturn]] void Fail(const char* what, const Status& st) {
  std::fprintf(stderr, "shard_wire_fuzz: %s: %s\n", what, st.ToString().c_str());
  std::abort();
}

// Refusals are InvalidArgument naming the field; anything else is a bug.
bool Accepted(const Status& st, const char* what) {
  if (st.ok()) return true;
  if (st.code() != sparrow::StatusCode::kInvalidArgument || st.message().empty()) Fail(what, st);
  return false;
}

void ReadAsAnswer(const std::string& bytes) {
  shardpb::StageResponse r;
  if (!r.ParseFromString(bytes)) return;
  std::vector<float> out(kEmbd * 4);
  for (size_t n : {size_t{0}, size_t{kEmbd}, out.size()}) {
    (void)Accepted(
        sparrow::server::DecodeHidden(r.hidden(), r.encoding(), n, std::span<float>(out.data(), n)),
        "answer hidden");
  }
}

void WriteSeeds(const char* dir) {
  auto record = [](const shardpb::StageRequest& r) {
    const std::string b = r.SerializeAsString();
    return std::string{static_cast<char>(b.size() & 0xff), static_cast<char>(b.size() >> 8)} + b;
  };
  shardpb::StageRequest assign;
  auto* a = assign.mutable_assign();
  a->set_first_layer(0);
  a->set_end_layer(kLayers);
  a->set_kv_block_size(16);
  a->set_kv_blocks(8);
  shardpb::StageRequest step;
  auto* s = step.mutable_step();
  s->set_id(1);
  s->add_ops()->mutable_copy()->set_dst(3);
  auto* seg = s->add_segments();
  for (int t : {1, 2, 3}) seg->add_tokens(t);
  seg->set_start_pos(14);
  seg->add_blocks(0);
  seg->add_blocks(3);
  std::vector<float> h(3 * kEmbd, 0.5f);
  sparrow::server::EncodeHidden(h, shardpb::ENCODING_F32, s->mutable_hidden());
  shardpb::StageRequest f16 = step, q8 = step, resize;
  f16.mutable_step()->set_encoding(shardpb::ENCODING_F16);
  sparrow::server::EncodeHidden(h, shardpb::ENCODING_F16, f16.mutable_step()->mutable_hidden());
  q8.mutable_step()->set_encoding(shardpb::ENCODING_Q8_0);
  sparrow::server::EncodeHidden(h, shardpb::ENCODING_Q8_0, q8.mutable_step()->mutable_hidden());
  resize.mutable_step()->add_ops()->set_resize(4);
  const std::string base = std::string(dir) + "/";
  std::ofstream(base + "f32_step", std::ios::binary) << record(assign) << record(step);
  std::ofstream(base + "f16_step", std::ios::binary) << record(assign) << record(f16);
  std::ofstream(base + "q8_0_steps", std::ios::binary)
      << record(assign) << record(q8) << record(resize) << record(step);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Strings that are not UTF-8 are refused by the parser, which logs each one: noise here.
  google::protobuf::SetLogHandler(nullptr);
  if (const char* dir = std::getenv("SHARD_FUZZ_SEEDS")) {
    WriteSeeds(dir);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::unique_ptr<sparrow::MirroredKvBlocks> kv;
  sparrow::server::DecodedStep decoded;
  std::vector<float> hidden;
  size_t at = 0;
  while (at + 2 <= size) {
    const size_t len = data[at] | (size_t{data[at + 1]} << 8);
    at += 2;
    if (len > size - at) break;
    const std::string bytes(reinterpret_cast<const char*>(data + at), len);
    at += len;
    ReadAsAnswer(bytes);
    shardpb::StageRequest req;
    if (!req.ParseFromString(bytes)) return 0;
    if (!kv) {
      if (!req.has_assign()) return 0;
      const sparrow::ShardAssignment a = sparrow::server::AssignmentFromProto(req.assign());
      if (!Accepted(sparrow::CheckAssignment(a, kLayers, kKvDim), "assignment")) return 0;
      kv = std::make_unique<sparrow::MirroredKvBlocks>(a.first_layer, a.end_layer, kKvDim,
                                                       a.kv_block_size, a.kv_blocks, a.kv_types);
      continue;
    }
    if (!req.has_step()) return 0;
    const shardpb::Step& step = req.step();
    if (!Accepted(sparrow::server::DecodeStep(step, &decoded), "step")) return 0;
    for (const sparrow::KvBlockOp& op : decoded.ops) {
      if (!Accepted(kv->Apply(op), "block op")) return 0;
    }
    for (size_t i = 0; i < decoded.segments.size(); ++i) {
      const sparrow::StageSegment& s = decoded.segments[i];
      if (!Accepted(sparrow::CheckSegment(s, i, kv->block_size(), kv->n_blocks(), kVocab),
                    "segment")) {
        return 0;
      }
      // What the forward pass does with an accepted segment: every position through the table.
      sparrow::MirroredSequenceKv view(kv.get(), s.blocks);
      const sparrow::KvTypes a_types = kv->types();
      for (size_t t = 0; t < s.tokens.size(); ++t) {
        const int64_t pos = s.start_pos + static_cast<int64_t>(t);
        const float row[kKvDim] = {1.0f, 1.0f};
        sparrow::StoreKvRow(a_types.k, row, view.KeyRow(kv->first_layer(), pos), kKvDim);
        sparrow::StoreKvRow(a_types.v, row, view.ValueRow(kv->end_layer() - 1, pos), kKvDim);
      }
    }
    hidden.resize(decoded.tokens * kEmbd);
    if (!Accepted(
            sparrow::server::DecodeHidden(step.hidden(), step.encoding(), hidden.size(), hidden),
            "hidden")) {
      return 0;
    }
  }
  return 0;
}
