// The synthetic files of tests/util/synthetic_arch.h: deterministic, llama.cpp's names and keys,
// and `sparrow quantize` applied to one of them.
#include "tests/util/synthetic_arch.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/model/gguf_file.h"
#include "engine/tools/quantize_command.h"
#include "tests/util/test_paths.h"

namespace sparrow::testing {
namespace {

constexpr ArchFamily kAll[] = {
    ArchFamily::kPhi3,      ArchFamily::kGemma2,      ArchFamily::kMixtral,
    ArchFamily::kOlmoe,     ArchFamily::kSmollm3,     ArchFamily::kSmallthinker,
    ArchFamily::kLlamaYarn, ArchFamily::kQwen3Rerank, ArchFamily::kQwen3RerankPlain};

std::vector<uint8_t> Bytes(ArchFamily f, uint64_t seed) {
  auto w = MakeArchModel({f, seed});
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  return w.ok() ? w->Bytes() : std::vector<uint8_t>{};
}

std::vector<uint64_t> Dims(const GgufFile& f, const std::string& name) {
  const GgufTensorInfo* t = f.FindTensor(name);
  return t ? t->dims : std::vector<uint64_t>{};
}

TEST(SyntheticArch, SameSeedSameBytesAndNamesRoundTrip) {
  for (ArchFamily fam : kAll) {
    const std::string name(ArchFamilyName(fam));
    EXPECT_EQ(ParseArchFamily(name), fam);
    const std::vector<uint8_t> a = Bytes(fam, 1);
    EXPECT_EQ(a, Bytes(fam, 1)) << name;
    EXPECT_NE(a, Bytes(fam, 2)) << name;
    auto f = GgufFile::FromMemory(a);
    ASSERT_TRUE(f.ok()) << name << ": " << f.status().ToString();
    const bool llama = fam == ArchFamily::kMixtral || fam == ArchFamily::kLlamaYarn;
    const bool rerank = fam == ArchFamily::kQwen3Rerank || fam == ArchFamily::kQwen3RerankPlain;
    const std::string arch = llama ? "llama" : rerank ? "qwen3" : name;
    EXPECT_EQ(*(*f)->GetString("general.architecture"), arch);
    EXPECT_EQ((*(*f)->GetArray("tokenizer.ggml.tokens"))->size, 512u) << name;
    EXPECT_EQ(*(*f)->GetUInt(arch + ".embedding_length"), 256u) << name;
  }
  EXPECT_FALSE(ParseArchFamily("llama").has_value());
}

TEST(SyntheticArch, LayoutsFollowLlamaCpp) {
  auto phi3 = GgufFile::FromMemory(Bytes(ArchFamily::kPhi3, 1));
  ASSERT_TRUE(phi3.ok());
  const GgufFile& p = **phi3;
  EXPECT_EQ(Dims(p, "blk.1.attn_qkv.weight"), (std::vector<uint64_t>{256, 512}));
  EXPECT_EQ(Dims(p, "blk.1.ffn_up.weight"), (std::vector<uint64_t>{256, 1024}));
  EXPECT_EQ(Dims(p, "rope_factors_long.weight"), (std::vector<uint64_t>{24}));
  EXPECT_EQ(p.FindTensor("blk.0.attn_q.weight"), nullptr);
  EXPECT_EQ(*p.GetUInt("phi3.rope.dimension_count"), 48u);

  auto gemma2 = GgufFile::FromMemory(Bytes(ArchFamily::kGemma2, 1));
  ASSERT_TRUE(gemma2.ok());
  EXPECT_EQ((*gemma2)->FindTensor("output.weight"), nullptr);  // llama.cpp ties gemma2
  EXPECT_FLOAT_EQ(*(*gemma2)->GetFloat("gemma2.attn_logit_softcapping"), 3.0f);
  EXPECT_NE((*gemma2)->FindTensor("blk.3.post_ffw_norm.weight"), nullptr);

  auto olmoe = GgufFile::FromMemory(Bytes(ArchFamily::kOlmoe, 1));
  ASSERT_TRUE(olmoe.ok());
  EXPECT_EQ(Dims(**olmoe, "blk.0.attn_k_norm.weight"), (std::vector<uint64_t>{256}));
  EXPECT_EQ(Dims(**olmoe, "blk.1.ffn_down_exps.weight"), (std::vector<uint64_t>{128, 256, 8}));
}

// The 8-expert file takes llama-quantize's MoE rules end to end.
TEST(SyntheticArch, MixtralQuantizesWithTheEightExpertRules) {
  const std::string in = TempPath("synth-mixtral-f32.gguf");
  ASSERT_TRUE(WriteArchModel({ArchFamily::kMixtral, 1}, in).ok());
  const std::string out = TempPath("synth-mixtral-q4_k_m.gguf");
  auto sum = tools::QuantizeModel({in, out, "q4_k_m"});
  ASSERT_TRUE(sum.ok()) << sum.status().ToString();
  auto f = GgufFile::Open(out);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ((*f)->FindTensor("blk.0.attn_v.weight")->type, TensorType::kQ8_0);
  EXPECT_EQ((*f)->FindTensor("blk.0.attn_output.weight")->type, TensorType::kQ5_K);
  EXPECT_EQ((*f)->FindTensor("blk.1.ffn_down_exps.weight")->type, TensorType::kQ8_0);
  EXPECT_EQ((*f)->FindTensor("blk.1.ffn_gate_inp.weight")->type, TensorType::kF32);
}

}  // namespace
}  // namespace sparrow::testing
