// GgufFile on the real shared models, on writer round trips of every value type, and through the
// typed accessors. Malformed files are in gguf_file_malformed_test.cc.
#include "engine/model/gguf_file.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "engine/model/model.h"
#include "tests/util/fault_env.h"
#include "tests/util/gguf_touch.h"
#include "tests/util/gguf_writer.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

using testing::GgufImage;
using testing::GgufWriter;
using testing::ModelPath;

struct RealFile {
  const char* path;  // under models/
  uint64_t n_tensors;
  uint64_t n_kv;
  const char* arch;
  uint64_t n_vocab;
};

// Counts read independently of the reader (by a separate dump script) from the shared files.
constexpr RealFile kRealFiles[] = {
    {"aidreams260K-f32.gguf", 39, 19, "llama", 512},
    {"aidreams260K-q4_0.gguf", 39, 20, "llama", 512},
    {"aidreams260K-q8_0.gguf", 39, 20, "llama", 512},
    {"llama-2-tiny-random.gguf", 12, 18, "llama", 32000},
    {"stories260K-q4_0.gguf", 48, 20, "llama", 512},
    {"stories260K-q8_0.gguf", 48, 20, "llama", 512},
    {"stories260K.gguf", 48, 19, "llama", 512},
    {"synthetic/synth-llama-f16.gguf", 21, 22, "llama", 512},
    {"synthetic/synth-llama-f32.gguf", 21, 21, "llama", 512},
    {"synthetic/synth-llama-q4_0.gguf", 21, 22, "llama", 512},
    {"synthetic/synth-llama-q4_k_m.gguf", 21, 22, "llama", 512},
    {"synthetic/synth-llama-q5_k_m.gguf", 21, 22, "llama", 512},
    {"synthetic/synth-llama-q6_k.gguf", 21, 22, "llama", 512},
    {"synthetic/synth-llama-q8_0.gguf", 21, 22, "llama", 512},
    {"synthetic/synth-llama-tied-f16.gguf", 20, 22, "llama", 512},
    {"synthetic/synth-llama-tied-f32.gguf", 20, 21, "llama", 512},
    {"synthetic/synth-llama-tied-q4_0.gguf", 20, 22, "llama", 512},
    {"synthetic/synth-llama-tied-q4_k_m.gguf", 20, 22, "llama", 512},
    {"synthetic/synth-llama-tied-q5_k_m.gguf", 20, 22, "llama", 512},
    {"synthetic/synth-llama-tied-q6_k.gguf", 20, 22, "llama", 512},
    {"synthetic/synth-llama-tied-q8_0.gguf", 20, 22, "llama", 512},
    {"synthetic/synth-qwen2-f16.gguf", 27, 22, "qwen2", 512},
    {"synthetic/synth-qwen2-f32.gguf", 27, 21, "qwen2", 512},
    {"synthetic/synth-qwen2-q4_0.gguf", 27, 22, "qwen2", 512},
    {"synthetic/synth-qwen2-q4_k_m.gguf", 27, 22, "qwen2", 512},
    {"synthetic/synth-qwen2-q5_k_m.gguf", 27, 22, "qwen2", 512},
    {"synthetic/synth-qwen2-q6_k.gguf", 27, 22, "qwen2", 512},
    {"synthetic/synth-qwen2-q8_0.gguf", 27, 22, "qwen2", 512},
    {"vocab/ggml-vocab-baichuan.gguf", 0, 18, "baichuan", 64000},
    {"vocab/ggml-vocab-bert-bge.gguf", 0, 20, "bert", 30522},
    {"vocab/ggml-vocab-deepseek-coder.gguf", 0, 25, "llama", 32256},
    {"vocab/ggml-vocab-deepseek-llm.gguf", 0, 23, "llama", 102400},
    {"vocab/ggml-vocab-falcon.gguf", 0, 18, "falcon", 65024},
    {"vocab/ggml-vocab-gpt-2.gguf", 0, 16, "gpt2", 50257},
    {"vocab/ggml-vocab-gpt-neox.gguf", 0, 17, "gptneox", 50432},
    {"vocab/ggml-vocab-llama-spm.gguf", 0, 22, "llama", 32000},
    {"vocab/ggml-vocab-mpt.gguf", 0, 17, "mpt", 50432},
    {"vocab/ggml-vocab-phi-3.gguf", 0, 26, "phi3", 32064},
    {"vocab/ggml-vocab-refact.gguf", 0, 18, "refact", 49216},
    {"vocab/ggml-vocab-starcoder.gguf", 0, 19, "starcoder2", 49152},
};

std::unique_ptr<GgufFile> OpenOrFail(const std::string& path) {
  auto f = GgufFile::Open(path);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  return f.ok() ? std::move(f).value() : nullptr;
}

// Properties every well-formed file has, whatever it holds.
void ExpectConsistent(const GgufFile& f) {
  EXPECT_EQ(f.data_offset() % f.alignment(), 0u);
  for (const auto& [key, value] : f.metadata()) EXPECT_EQ(f.Find(key), &value) << key;
  for (const GgufTensorInfo& t : f.tensors()) {
    SCOPED_TRACE(t.name);
    EXPECT_EQ(f.FindTensor(t.name), &t);
    auto traits = GetTensorTypeTraits(t.type);
    ASSERT_TRUE(traits.has_value());
    uint64_t n = 1;
    for (uint64_t d : t.dims) n *= d;
    EXPECT_EQ(t.n_elements, n);
    EXPECT_EQ(t.n_bytes, n / traits->block_elems * traits->block_bytes);
    EXPECT_EQ(t.data, f.base() + f.data_offset() + t.offset);
    EXPECT_EQ(t.offset % f.alignment(), 0u);
    EXPECT_LE(f.data_offset() + t.offset + t.n_bytes, f.file_size());
  }
  testing::TouchGguf(f);
}

TEST(GgufFileTest, OpensEveryRealFile) {
  size_t seen = 0;
  for (const RealFile& rf : kRealFiles) {
    const std::string path = ModelPath(rf.path);
    SCOPED_TRACE(path);
    if (!testing::FileExists(path)) GTEST_SKIP() << "shared models missing: " << path;
    auto f = OpenOrFail(path);
    ASSERT_NE(f, nullptr);
    ++seen;
    EXPECT_EQ(f->path(), path);
    EXPECT_EQ(f->version(), 3u);
    EXPECT_EQ(f->alignment(), 32u);
    EXPECT_EQ(f->tensors().size(), rf.n_tensors);
    EXPECT_EQ(f->metadata().size(), rf.n_kv);
    auto arch = f->GetString("general.architecture");
    ASSERT_TRUE(arch.ok()) << arch.status().ToString();
    EXPECT_EQ(*arch, rf.arch);
    auto tokens = f->GetArray("tokenizer.ggml.tokens");
    ASSERT_TRUE(tokens.ok()) << tokens.status().ToString();
    EXPECT_EQ((*tokens)->elem_type, GgufValueType::kString);
    EXPECT_EQ((*tokens)->size, rf.n_vocab);
    EXPECT_EQ((*tokens)->strings.size(), rf.n_vocab);
    ExpectConsistent(*f);
  }
  // Every .gguf under models/ is in the table, so a new file is not silently left untested.
  size_t on_disk = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(ModelPath(""))) {
    on_disk += e.path().extension() == ".gguf";
  }
  EXPECT_EQ(on_disk, seen);
}

TEST(GgufFileTest, Stories260KKnownValues) {
  const std::string path = ModelPath("stories260K.gguf");
  if (!testing::FileExists(path)) GTEST_SKIP() << "missing " << path;
  auto f = OpenOrFail(path);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(*f->GetUInt("llama.embedding_length"), 64u);
  EXPECT_EQ(*f->GetUInt("llama.block_count"), 5u);
  EXPECT_EQ(*f->GetUInt("llama.feed_forward_length"), 172u);
  EXPECT_EQ(*f->GetUInt("llama.attention.head_count"), 8u);
  EXPECT_EQ(*f->GetUInt("llama.attention.head_count_kv"), 4u);
  EXPECT_EQ(*f->GetUInt("llama.context_length"), 2048u);
  EXPECT_EQ(*f->GetInt("llama.rope.dimension_count"), 8);
  EXPECT_FLOAT_EQ(static_cast<float>(*f->GetFloat("llama.attention.layer_norm_rms_epsilon")),
                  1e-5f);
  EXPECT_EQ(*f->GetUInt("tokenizer.ggml.seperator_token_id"), 4294967295u);
  EXPECT_EQ(*f->GetString("tokenizer.ggml.model"), "llama");
  EXPECT_FALSE(f->Find("llama.rope.freq_base"));
  EXPECT_DOUBLE_EQ(*f->GetFloatOr("llama.rope.freq_base", 10000.0), 10000.0);

  const GgufArray* tokens = *f->GetArray("tokenizer.ggml.tokens");
  EXPECT_EQ(tokens->strings[0], "<unk>");
  EXPECT_EQ(tokens->strings[1], "<s>");
  EXPECT_EQ(tokens->strings[2], "</s>");
  EXPECT_EQ(tokens->strings[3], "<0x00>");
  const GgufArray* types = *f->GetArray("tokenizer.ggml.token_type");
  EXPECT_EQ(types->elem_type, GgufValueType::kI32);
  auto type_ids = GgufFile::ArrayAsInts(*types, "tokenizer.ggml.token_type");
  ASSERT_TRUE(type_ids.ok());
  ASSERT_EQ(type_ids->size(), 512u);
  EXPECT_EQ((*type_ids)[0], 2);
  EXPECT_EQ((*type_ids)[1], 3);
  EXPECT_EQ((*type_ids)[3], 6);
  auto scores = GgufFile::ArrayAsFloats(**f->GetArray("tokenizer.ggml.scores"), "scores");
  ASSERT_TRUE(scores.ok());
  EXPECT_EQ(scores->size(), 512u);

  struct Shape {
    const char* name;
    std::vector<uint64_t> dims;
  };
  const Shape shapes[] = {
      {"token_embd.weight", {64, 512}},       {"output_norm.weight", {64}},
      {"output.weight", {64, 512}},           {"blk.0.attn_q.weight", {64, 64}},
      {"blk.0.attn_k.weight", {64, 32}},      {"blk.0.attn_v.weight", {64, 32}},
      {"blk.4.attn_output.weight", {64, 64}}, {"blk.4.ffn_gate.weight", {64, 172}},
      {"blk.4.ffn_down.weight", {172, 64}},   {"blk.4.ffn_norm.weight", {64}},
  };
  for (const Shape& s : shapes) {
    const GgufTensorInfo* t = f->FindTensor(s.name);
    ASSERT_NE(t, nullptr) << s.name;
    EXPECT_EQ(t->dims, s.dims) << s.name;
    EXPECT_EQ(t->type, TensorType::kF32) << s.name;
  }
  EXPECT_EQ(f->FindTensor("blk.5.attn_q.weight"), nullptr);
  const GgufTensorInfo* emb = f->FindTensor("token_embd.weight");
  const GgufTensorInfo* out = f->FindTensor("output.weight");
  EXPECT_EQ(emb->offset, 0u);
  EXPECT_EQ(out->offset, 131328u);
  EXPECT_EQ(emb->rows(), 512u);
  EXPECT_EQ(emb->row_bytes(), 256u);
  // The file's output matrix is a copy of the embedding: equal bytes at two different offsets.
  ASSERT_EQ(emb->n_bytes, out->n_bytes);
  EXPECT_EQ(std::memcmp(emb->data, out->data, emb->n_bytes), 0);
  float first;
  std::memcpy(&first, emb->data, 4);
  EXPECT_TRUE(std::isfinite(first));
}

TEST(GgufFileTest, QuantizedAndF16TensorTypes) {
  struct Expect {
    const char* file;
    const char* tensor;
    TensorType type;
    uint64_t n_bytes;
  };
  const Expect cases[] = {
      {"stories260K-q4_0.gguf", "blk.0.attn_q.weight", TensorType::kQ4_0, 64 * 64 / 32 * 18},
      {"stories260K-q4_0.gguf", "blk.0.ffn_down.weight", TensorType::kF16, 172 * 64 * 2},
      {"stories260K-q8_0.gguf", "blk.0.attn_q.weight", TensorType::kQ8_0, 64 * 64 / 32 * 34},
      {"llama-2-tiny-random.gguf", "token_embd.weight", TensorType::kF16, 8 * 32000 * 2},
      {"llama-2-tiny-random.gguf", "blk.0.attn_norm.weight", TensorType::kF32, 8 * 4},
      {"synthetic/synth-qwen2-q4_k_m.gguf", "token_embd.weight", TensorType::kQ4_K, 512 * 144},
      {"synthetic/synth-qwen2-q4_k_m.gguf", "output.weight", TensorType::kQ6_K, 512 * 210},
      {"synthetic/synth-qwen2-q4_k_m.gguf", "blk.0.attn_q.bias", TensorType::kF32, 256 * 4},
  };
  for (const Expect& e : cases) {
    const std::string path = ModelPath(e.file);
    if (!testing::FileExists(path)) GTEST_SKIP() << "missing " << path;
    auto f = OpenOrFail(path);
    ASSERT_NE(f, nullptr);
    const GgufTensorInfo* t = f->FindTensor(e.tensor);
    ASSERT_NE(t, nullptr) << e.file << " " << e.tensor;
    EXPECT_EQ(t->type, e.type) << e.file << " " << e.tensor;
    EXPECT_EQ(t->n_bytes, e.n_bytes) << e.file << " " << e.tensor;
  }
}

TEST(GgufFileTest, VocabOnlyFileEndsAtHeader) {
  const std::string path = ModelPath("vocab/ggml-vocab-bert-bge.gguf");
  if (!testing::FileExists(path)) GTEST_SKIP() << "missing " << path;
  auto f = OpenOrFail(path);
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->tensors().empty());
  auto causal = f->GetBool("bert.attention.causal");
  ASSERT_TRUE(causal.ok()) << causal.status().ToString();
  EXPECT_FALSE(*causal);
  EXPECT_EQ(*f->GetString("tokenizer.ggml.model"), "bert");
}

TEST(GgufFileTest, MissingFileIsNotFoundAndNamesThePath) {
  const std::string path = ModelPath("no-such-model.gguf");
  auto f = GgufFile::Open(path);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kNotFound);
  EXPECT_NE(f.status().message().find(path), std::string::npos) << f.status().message();
}

TEST(GgufFileTest, ErrorsFromOpenNameThePath) {
  const std::string path = ::testing::TempDir() + "/gguf_file_test_bad_magic.gguf";
  GgufWriter w;
  w.AddU32("a", 1);
  GgufImage img = w.Build();
  img.SetMagic("GGML");
  ASSERT_TRUE(img.WriteFile(path).ok());
  auto f = GgufFile::Open(path);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(f.status().message().find(path), std::string::npos) << f.status().message();

  const std::string empty = ::testing::TempDir() + "/gguf_file_test_empty.gguf";
  ASSERT_TRUE(GgufImage{}.WriteFile(empty).ok());
  auto e = GgufFile::Open(empty);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kCorrupt);
  std::filesystem::remove(path);
  std::filesystem::remove(empty);
}

// The file is mapped through the Env (the seam the engine's tests inject faults at): a model
// loads through the one it is given, and a map the Env refuses fails the load with the path.
TEST(GgufFileTest, TheFileIsMappedThroughTheEnv) {
  testing::FaultyEnv env;
  const std::string path = testing::ModelPath("stories260K.gguf");
  auto m = Model::Load(path, &env);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(env.faults().maps, 1);
  EXPECT_EQ((*m)->file().path(), path);
  env.faults().refuse_maps = true;
  auto refused = Model::Load(path, &env);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kIoError);
  EXPECT_NE(refused.status().message().find(path), std::string::npos);
  EXPECT_NE(refused.status().message().find("cannot map"), std::string::npos);
  // The Env's own errors keep their kind.
  auto missing = GgufFile::Open(::testing::TempDir() + "/no-such-model.gguf");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  auto dir = GgufFile::Open(::testing::TempDir());
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.status().code(), StatusCode::kInvalidArgument);
}

TEST(GgufFileTest, OpenedFromDiskMatchesFromMemory) {
  GgufWriter w;
  w.AddString("general.architecture", "llama").AddU32("x", 5);
  std::vector<float> vals = {1, 2, 3, 4, 5, 6};
  w.AddTensorF32("t", TensorType::kF16, {3, 2}, vals);
  const std::string path = ::testing::TempDir() + "/gguf_file_test_disk.gguf";
  ASSERT_TRUE(w.WriteFile(path).ok());
  auto f = OpenOrFail(path);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(*f->GetUInt("x"), 5u);
  const GgufTensorInfo* t = f->FindTensor("t");
  ASSERT_NE(t, nullptr);
  uint16_t h[6];
  ASSERT_EQ(t->n_bytes, sizeof(h));
  std::memcpy(h, t->data, sizeof(h));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(testing::HalfToFloat(h[i]), vals[i]);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace sparrow
