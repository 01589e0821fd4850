#include "tests/util/synthetic_arch.h"

#include <cmath>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "engine/common/check.h"
#include "engine/model/gguf_file.h"
#include "tests/util/test_paths.h"

namespace sparrow::testing {
namespace {

constexpr uint64_t kEmbd = 256, kFf = 512, kExpertFf = 128, kHeadDim = 64, kVocab = 512;
constexpr uint64_t kBertVocab = 30522;  // ggml-vocab-bert-bge.gguf's
constexpr std::string_view kDecoderVocab = "stories260K.gguf";
constexpr std::string_view kEncoderVocab = "vocab/ggml-vocab-bert-bge.gguf";
constexpr uint32_t kHead = 4, kHeadKv = 2, kCtx = 512, kExperts = 8, kExpertsUsed = 2;

// How a tensor's values are drawn from uniform u in [-1, 1).
enum class Fill {
  kMatrix,     // u * 1.7 / sqrt(fan_in): unit-variance outputs for unit-variance inputs
  kOutput,     // u * 0.32: logits with a spread of about 3, so greedy steps rarely tie
  kEmbedding,  // u
  kNorm,       // 1 + 0.1 u
  kRopeShort,  // in [1, 2]
  kRopeLong,   // in [1, 8], as far from 1 as Phi-3.5's long factors
  kTiedEmbd,   // u * 0.006, and
  kTiedNorm,   // 50 + 5 u for output_norm: see Embeddings()
  kBias,       // 0.1 u
};

// Adds metadata and tensors in file order. Each tensor's values depend on (seed, name) only:
// std::seed_seq and std::mt19937_64 are fully specified by the standard, so the bytes are the
// same with every conforming library.
class Builder {
 public:
  Builder(GgufWriter& w, std::string arch, uint64_t seed)
      : w_(w), arch_(std::move(arch)), seed_(seed) {}

  std::string Key(std::string_view k) const { return arch_ + "." + std::string(k); }
  void Bool(std::string_view k, bool v) { w_.AddBool(Key(k), v); }
  void U32(std::string_view k, uint32_t v) { w_.AddU32(Key(k), v); }
  void F32(std::string_view k, float v) { w_.AddF32(Key(k), v); }
  void Str(std::string_view k, std::string_view v) { w_.AddString(Key(k), v); }
  void Strs(std::string_view k, const std::vector<std::string>& v) { w_.AddStringArray(Key(k), v); }

  void Tensor(const std::string& name, std::vector<uint64_t> dims, Fill fill) {
    uint64_t n = 1;
    for (uint64_t d : dims) n *= d;
    std::vector<uint32_t> seeds = {static_cast<uint32_t>(seed_),
                                   static_cast<uint32_t>(seed_ >> 32)};
    for (unsigned char c : name) seeds.push_back(c);
    std::seed_seq seq(seeds.begin(), seeds.end());
    std::mt19937_64 gen(seq);
    const float matrix_scale = 1.7f / std::sqrt(static_cast<float>(dims[0]));
    std::vector<float> values(n);
    for (float& x : values) {
      const float u = static_cast<float>(gen() >> 40) * (2.0f / 16777216.0f) - 1.0f;
      switch (fill) {
        case Fill::kMatrix:
          x = u * matrix_scale;
          break;
        case Fill::kOutput:
          x = u * 0.32f;
          break;
        case Fill::kEmbedding:
          x = u;
          break;
        case Fill::kNorm:
          x = 1.0f + 0.1f * u;
          break;
        case Fill::kRopeShort:
          x = 1.5f + 0.5f * u;
          break;
        case Fill::kRopeLong:
          x = 4.5f + 3.5f * u;
          break;
        case Fill::kTiedEmbd:
          x = 0.006f * u;
          break;
        case Fill::kTiedNorm:
          x = 50.0f + 5.0f * u;
          break;
        case Fill::kBias:
          x = 0.1f * u;
          break;
      }
    }
    w_.AddTensorF32(name, TensorType::kF32, std::move(dims), values);
  }

 private:
  GgufWriter& w_;
  std::string arch_;
  uint64_t seed_;
};

std::string Blk(int il, std::string_view t) {
  return "blk." + std::to_string(il) + "." + std::string(t) + ".weight";
}

// The keys every family has, in the order gguf-py's converters write them.
void CommonKeys(Builder& b, uint32_t n_layer, uint64_t n_ff, uint32_t n_head_kv) {
  b.U32("context_length", kCtx);
  b.U32("embedding_length", kEmbd);
  b.U32("feed_forward_length", static_cast<uint32_t>(n_ff));
  b.U32("block_count", n_layer);
  b.U32("attention.head_count", kHead);
  b.U32("attention.head_count_kv", n_head_kv);
  b.F32("attention.layer_norm_rms_epsilon", 1e-6f);
  b.F32("rope.freq_base", 10000.0f);
}

// A tied token_embd is also the output matrix. Were it as large as an untied one, the current
// token's own embedding in the residual (scaled by 16 in Gemma) would give that token the top
// logit and greedy decoding would repeat it forever; so it is tiny, and a large output norm
// brings the logits back to a spread of about 3.
void Embeddings(Builder& b, bool tied) {
  b.Tensor("token_embd.weight", {kEmbd, kVocab}, tied ? Fill::kTiedEmbd : Fill::kEmbedding);
  b.Tensor("output_norm.weight", {kEmbd}, tied ? Fill::kTiedNorm : Fill::kNorm);
  if (!tied) b.Tensor("output.weight", {kEmbd, kVocab}, Fill::kOutput);
}

void Attention(Builder& b, int il, uint32_t n_head_kv) {
  b.Tensor(Blk(il, "attn_norm"), {kEmbd}, Fill::kNorm);
  b.Tensor(Blk(il, "attn_q"), {kEmbd, kHead * kHeadDim}, Fill::kMatrix);
  b.Tensor(Blk(il, "attn_k"), {kEmbd, n_head_kv * kHeadDim}, Fill::kMatrix);
  b.Tensor(Blk(il, "attn_v"), {kEmbd, n_head_kv * kHeadDim}, Fill::kMatrix);
  b.Tensor(Blk(il, "attn_output"), {kHead * kHeadDim, kEmbd}, Fill::kMatrix);
}

void DenseFfn(Builder& b, int il) {
  b.Tensor(Blk(il, "ffn_norm"), {kEmbd}, Fill::kNorm);
  b.Tensor(Blk(il, "ffn_gate"), {kEmbd, kFf}, Fill::kMatrix);
  b.Tensor(Blk(il, "ffn_up"), {kEmbd, kFf}, Fill::kMatrix);
  b.Tensor(Blk(il, "ffn_down"), {kFf, kEmbd}, Fill::kMatrix);
}

// Router and 3-D expert tensors {cols, rows, expert}.
void MoeFfn(Builder& b, int il) {
  b.Tensor(Blk(il, "ffn_norm"), {kEmbd}, Fill::kNorm);
  b.Tensor(Blk(il, "ffn_gate_inp"), {kEmbd, kExperts}, Fill::kMatrix);
  b.Tensor(Blk(il, "ffn_gate_exps"), {kEmbd, kExpertFf, kExperts}, Fill::kMatrix);
  b.Tensor(Blk(il, "ffn_up_exps"), {kEmbd, kExpertFf, kExperts}, Fill::kMatrix);
  b.Tensor(Blk(il, "ffn_down_exps"), {kExpertFf, kEmbd, kExperts}, Fill::kMatrix);
}

// Phi-3.5 / Phi-4-mini: fused attn_qkv, ffn_up = [gate; up], partial rotary (48 of 64), LongRoPE
// factor tables with the long ones in use (the 512 context exceeds the original 128), and the
// attention factor the converter derives from that ratio.
void Phi3(Builder& b) {
  constexpr uint32_t kLayers = 2, kRopeDim = 48;
  CommonKeys(b, kLayers, kFf, kHeadKv);
  b.U32("rope.scaling.original_context_length", 128);
  b.U32("rope.dimension_count", kRopeDim);
  b.U32("attention.sliding_window", 0);
  b.F32("rope.scaling.attn_factor", std::sqrt(1.0f + std::log(512.0f / 128) / std::log(128.0f)));
  Embeddings(b, false);
  b.Tensor("rope_factors_long.weight", {kRopeDim / 2}, Fill::kRopeLong);
  b.Tensor("rope_factors_short.weight", {kRopeDim / 2}, Fill::kRopeShort);
  for (int il = 0; il < static_cast<int>(kLayers); ++il) {
    b.Tensor(Blk(il, "attn_norm"), {kEmbd}, Fill::kNorm);
    b.Tensor(Blk(il, "attn_qkv"), {kEmbd, (kHead + 2 * kHeadKv) * kHeadDim}, Fill::kMatrix);
    b.Tensor(Blk(il, "attn_output"), {kEmbd, kEmbd}, Fill::kMatrix);
    b.Tensor(Blk(il, "ffn_norm"), {kEmbd}, Fill::kNorm);
    b.Tensor(Blk(il, "ffn_up"), {kEmbd, 2 * kFf}, Fill::kMatrix);
    b.Tensor(Blk(il, "ffn_down"), {kFf, kEmbd}, Fill::kMatrix);
  }
}

// Gemma 2: soft-capped attention scores (cap 3) and final logits (cap 10), small enough to
// bend most values; sliding window 8 on even layers; post-norms; output tied as llama.cpp
// requires for gemma2.
void Gemma2(Builder& b) {
  constexpr uint32_t kLayers = 4;
  CommonKeys(b, kLayers, kFf, kHeadKv);
  b.U32("attention.key_length", kHeadDim);
  b.U32("attention.value_length", kHeadDim);
  b.U32("attention.sliding_window", 8);
  b.F32("attn_logit_softcapping", 3.0f);
  b.F32("final_logit_softcapping", 10.0f);
  Embeddings(b, true);
  for (int il = 0; il < static_cast<int>(kLayers); ++il) {
    Attention(b, il, kHeadKv);
    b.Tensor(Blk(il, "post_attention_norm"), {kEmbd}, Fill::kNorm);
    DenseFfn(b, il);
    b.Tensor(Blk(il, "post_ffw_norm"), {kEmbd}, Fill::kNorm);
  }
}

// The families whose layers are attention (optionally with whole-row QK-norm) and then a dense
// or MoE FFN, with an untied output: their common keys and all their tensors.
struct LlamaLike {
  uint32_t layers = 2;
  uint32_t n_head_kv = kHeadKv;
  bool moe = false;
  bool qk_norm = false;
};

void LlamaLikeModel(Builder& b, const LlamaLike& s) {
  CommonKeys(b, s.layers, s.moe ? kExpertFf : kFf, s.n_head_kv);
  if (s.moe) {
    b.U32("expert_count", kExperts);
    b.U32("expert_used_count", kExpertsUsed);
  }
  Embeddings(b, false);
  for (int il = 0; il < static_cast<int>(s.layers); ++il) {
    Attention(b, il, s.n_head_kv);
    if (s.qk_norm) {
      b.Tensor(Blk(il, "attn_q_norm"), {kEmbd}, Fill::kNorm);
      b.Tensor(Blk(il, "attn_k_norm"), {kEmbd}, Fill::kNorm);
    }
    if (s.moe) {
      MoeFfn(b, il);
    } else {
      DenseFfn(b, il);
    }
  }
}

// Mixtral: the llama architecture with 8 experts of 128, top 2.
void Mixtral(Builder& b) {
  LlamaLikeModel(b, {.moe = true});
  b.U32("rope.dimension_count", kHeadDim);
}

// OLMoE: QK-norm over the whole q and k rows (so no GQA: 4 KV heads, as in OLMoE-1B-7B),
// 8 experts of 128, top 2.
void Olmoe(Builder& b) {
  LlamaLikeModel(b, {.n_head_kv = kHead, .moe = true, .qk_norm = true});
}

// SmolLM3: llama layers where every fourth (layer 3 here) skips rope. SmolLM3-3B ties its
// output; this file does not (llama.cpp takes either), like the files of ../shared/arch.
void Smollm3(Builder& b) {
  LlamaLikeModel(b, {.layers = 4});
  b.U32("rope.dimension_count", kHeadDim);
}

// SmallThinker: the router reads the layer input (before the attention norm), sigmoid gating
// (expert_gating_func 2), 8 experts of 128, top 2; no sliding window, so every layer has rope.
void Smallthinker(Builder& b) {
  LlamaLikeModel(b, {.moe = true});
  b.U32("expert_feed_forward_length", kExpertFf);
  b.U32("expert_gating_func", 2);
}

// Llama with YaRN rope scaling (factor 4 over an original context of 64): the ramp between
// extrapolated and interpolated pairs and the attention factor, on every position.
void LlamaYarn(Builder& b) {
  LlamaLikeModel(b, {});
  b.U32("rope.dimension_count", kHeadDim);
  b.Str("rope.scaling.type", "yarn");
  b.F32("rope.scaling.factor", 4.0f);
  b.U32("rope.scaling.original_context_length", 64);
}

// The encoders (bert, nomic-bert): bge-small's layout at a tenth of its size (embedding 128, 4
// heads of 32, FFN 256, 2 layers), bge's WordPiece vocabulary (30522 tokens, 2 token types),
// every LayerNorm with its bias, non-causal attention. BERT: learned positions (512), q/k/v,
// output and FFN biases, GELU, CLS pooling; nomic-bert: fused QKV, NeoX rotary (base 1000),
// SwiGLU, no biases but the norms', mean pooling.
constexpr uint64_t kEncEmbd = 128, kEncFf = 256, kEncTypes = 2;
constexpr uint32_t kEncHead = 4, kEncLayers = 2;

std::string BlkBias(int il, std::string_view t) {
  return "blk." + std::to_string(il) + "." + std::string(t) + ".bias";
}

void EncoderKeys(Builder& b, uint32_t n_ctx, uint32_t pooling) {
  b.U32("context_length", n_ctx);
  b.U32("embedding_length", kEncEmbd);
  b.U32("feed_forward_length", kEncFf);
  b.U32("block_count", kEncLayers);
  b.U32("attention.head_count", kEncHead);
  b.F32("attention.layer_norm_epsilon", 1e-12f);
  b.Bool("attention.causal", false);
  b.U32("pooling_type", pooling);
}

void LayerNormTensors(Builder& b, const std::string& stem) {
  b.Tensor(stem + ".weight", {kEncEmbd}, Fill::kNorm);
  b.Tensor(stem + ".bias", {kEncEmbd}, Fill::kBias);
}

void EncoderInputs(Builder& b, bool positions, uint32_t n_ctx) {
  b.Tensor("token_embd.weight", {kEncEmbd, kBertVocab}, Fill::kEmbedding);
  b.Tensor("token_types.weight", {kEncEmbd, kEncTypes}, Fill::kEmbedding);
  if (positions) b.Tensor("position_embd.weight", {kEncEmbd, n_ctx}, Fill::kEmbedding);
  LayerNormTensors(b, "token_embd_norm");
}

constexpr uint32_t kBertCtx = 512;

void BertLayers(Builder& b) {
  EncoderInputs(b, true, kBertCtx);
  for (int il = 0; il < static_cast<int>(kEncLayers); ++il) {
    for (const char* t : {"attn_q", "attn_k", "attn_v", "attn_output"}) {
      b.Tensor(Blk(il, t), {kEncEmbd, kEncEmbd}, Fill::kMatrix);
      b.Tensor(BlkBias(il, t), {kEncEmbd}, Fill::kBias);
    }
    LayerNormTensors(b, "blk." + std::to_string(il) + ".attn_output_norm");
    b.Tensor(Blk(il, "ffn_up"), {kEncEmbd, kEncFf}, Fill::kMatrix);
    b.Tensor(BlkBias(il, "ffn_up"), {kEncFf}, Fill::kBias);
    b.Tensor(Blk(il, "ffn_down"), {kEncFf, kEncEmbd}, Fill::kMatrix);
    b.Tensor(BlkBias(il, "ffn_down"), {kEncEmbd}, Fill::kBias);
    LayerNormTensors(b, "blk." + std::to_string(il) + ".layer_output_norm");
  }
}

void Bert(Builder& b) {
  EncoderKeys(b, kBertCtx, /*pooling=*/2);
  BertLayers(b);
}

// A cross-encoder as llama.cpp's converter writes BertForSequenceClassification (bge-reranker,
// ms-marco's MiniLM): pooling type rank, the classifier's dense layer as cls (tanh after it in
// the graph) and its single-label projection as cls.output, each with its bias.
void BertRerank(Builder& b) {
  EncoderKeys(b, kBertCtx, /*pooling=*/4);
  b.Strs("classifier.output_labels", {"LABEL_0"});
  BertLayers(b);
  b.Tensor("cls.weight", {kEncEmbd, kEncEmbd}, Fill::kMatrix);
  b.Tensor("cls.bias", {kEncEmbd}, Fill::kBias);
  b.Tensor("cls.output.weight", {kEncEmbd, 1}, Fill::kOutput);
  b.Tensor("cls.output.bias", {1}, Fill::kBias);
}

void NomicBert(Builder& b) {
  EncoderKeys(b, 2048, /*pooling=*/1);
  b.F32("rope.freq_base", 1000.0f);
  EncoderInputs(b, false, 0);
  for (int il = 0; il < static_cast<int>(kEncLayers); ++il) {
    b.Tensor(Blk(il, "attn_qkv"), {kEncEmbd, 3 * kEncEmbd}, Fill::kMatrix);
    b.Tensor(Blk(il, "attn_output"), {kEncEmbd, kEncEmbd}, Fill::kMatrix);
    LayerNormTensors(b, "blk." + std::to_string(il) + ".attn_output_norm");
    b.Tensor(Blk(il, "ffn_up"), {kEncEmbd, kEncFf}, Fill::kMatrix);
    b.Tensor(Blk(il, "ffn_gate"), {kEncEmbd, kEncFf}, Fill::kMatrix);
    b.Tensor(Blk(il, "ffn_down"), {kEncFf, kEncEmbd}, Fill::kMatrix);
    LayerNormTensors(b, "blk." + std::to_string(il) + ".layer_output_norm");
  }
}
// Qwen3-Reranker as llama.cpp's converter writes it: qwen3 layers (per-head QK-norm), pooling
// type rank, labels yes/no, and the LM head's "yes" and "no" rows as cls.output (so no output
// matrix: llama.cpp then ties it to token_embd).
void Qwen3Rerank(Builder& b) {
  constexpr uint32_t kLayers = 2;
  CommonKeys(b, kLayers, kFf, kHeadKv);
  b.U32("pooling_type", 4);
  b.Strs("classifier.output_labels", {"yes", "no"});
  b.Tensor("token_embd.weight", {kEmbd, kVocab}, Fill::kEmbedding);
  b.Tensor("output_norm.weight", {kEmbd}, Fill::kNorm);
  b.Tensor("cls.output.weight", {kEmbd, 2}, Fill::kOutput);
  for (int il = 0; il < static_cast<int>(kLayers); ++il) {
    Attention(b, il, kHeadKv);
    b.Tensor(Blk(il, "attn_q_norm"), {kHeadDim}, Fill::kNorm);
    b.Tensor(Blk(il, "attn_k_norm"), {kHeadDim}, Fill::kNorm);
    DenseFfn(b, il);
  }
}

// Tokenizer keys a family sets over stories260K's (which has neither add_bos_token nor
// add_eos_token: SentencePiece's defaults, BOS and no EOS).
struct TokenizerKeys {
  std::optional<bool> add_bos = std::nullopt, add_eos = std::nullopt;
  std::string_view rerank_template = {};  // "" none
};

// A rerank template short enough for stories260K's vocabulary to keep pairs small; its words
// are text, so both llama.cpp's paths (llama-server: no BOS added; llama-embedding: the
// vocabulary's) agree only without a BOS, as Qwen3's vocabulary has none.
constexpr TokenizerKeys kRerankTemplated{
    .add_bos = false, .rerank_template = "Query: {query}\nDocument: {document}\nRelevant:"};
// [BOS] query [EOS] document [EOS]: llama-embedding's "query\tdocument" then writes the same
// tokens as llama-server's pair (an EOS between only when the vocabulary adds one).
constexpr TokenizerKeys kRerankPlain{.add_eos = true};

// Each family: its file name part, general.architecture, general.name and writer. Mixtral files
// say "llama". llama.cpp gives Phi-3 vocabularies special-token attributes when the name says
// "phi3", which needs tokens stories260K lacks; so that file is "synthetic-random-phi".
struct Family {
  ArchFamily id;
  std::string_view name;
  std::string_view arch;
  std::string_view general_name;
  void (*build)(Builder&);
  std::string_view vocab = kDecoderVocab;  // the model file whose tokenizer it takes
  TokenizerKeys tokenizer = {};
};
constexpr Family kFamilies[] = {
    {ArchFamily::kPhi3, "phi3", "phi3", "synthetic-random-phi", Phi3},
    {ArchFamily::kGemma2, "gemma2", "gemma2", "synthetic-random-gemma2", Gemma2},
    {ArchFamily::kMixtral, "mixtral", "llama", "synthetic-random-mixtral", Mixtral},
    {ArchFamily::kOlmoe, "olmoe", "olmoe", "synthetic-random-olmoe", Olmoe},
    {ArchFamily::kSmollm3, "smollm3", "smollm3", "synthetic-random-smollm3", Smollm3},
    {ArchFamily::kSmallthinker, "smallthinker", "smallthinker", "synthetic-random-smallthinker",
     Smallthinker},
    {ArchFamily::kLlamaYarn, "llamayarn", "llama", "synthetic-random-llama-yarn", LlamaYarn},
    {ArchFamily::kBert, "bert", "bert", "synthetic-random-bert", Bert, kEncoderVocab},
    {ArchFamily::kNomicBert, "nomic-bert", "nomic-bert", "synthetic-random-nomic-bert", NomicBert,
     kEncoderVocab},
    {ArchFamily::kQwen3Rerank, "qwen3rerank", "qwen3", "synthetic-random-qwen3-reranker",
     Qwen3Rerank, kDecoderVocab, kRerankTemplated},
    {ArchFamily::kQwen3RerankPlain, "qwen3rerankplain", "qwen3",
     "synthetic-random-qwen3-reranker-plain", Qwen3Rerank, kDecoderVocab, kRerankPlain},
    {ArchFamily::kBertRerank, "bertrerank", "bert", "synthetic-random-bert-reranker", BertRerank,
     kEncoderVocab},
};

const Family& FamilyOf(ArchFamily f) {
  for (const Family& fam : kFamilies) {
    if (fam.id == f) return fam;
  }
  SPARROW_CHECK(false && "unknown ArchFamily");
  return kFamilies[0];
}

}  // namespace

std::string_view ArchFamilyName(ArchFamily f) {
  return FamilyOf(f).name;
}

std::optional<ArchFamily> ParseArchFamily(std::string_view name) {
  for (const Family& fam : kFamilies) {
    if (fam.name == name) return fam.id;
  }
  return std::nullopt;
}

Result<GgufWriter> MakeArchModel(const ArchModelSpec& spec) {
  const Family& fam = FamilyOf(spec.family);
  const std::string vocab_path = ModelPath(std::string(fam.vocab));
  SPARROW_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> vocab, GgufFile::Open(vocab_path));
  const std::string arch(fam.arch);
  GgufWriter w;
  w.AddString("general.architecture", arch);
  w.AddString("general.name", fam.general_name);
  w.AddU32("general.file_type", 0);
  Builder b(w, arch, spec.seed);
  fam.build(b);
  // Metadata and tensors are separate sections: these keys follow the family's own.
  const TokenizerKeys& tk = fam.tokenizer;
  for (const auto& [key, value] : vocab->metadata()) {
    if ((tk.add_bos && key == "tokenizer.ggml.add_bos_token") ||
        (tk.add_eos && key == "tokenizer.ggml.add_eos_token")) {
      continue;
    }
    if (key.starts_with("tokenizer.")) {
      SPARROW_RETURN_IF_ERROR(w.AddCopy(key, value).WithContext(vocab_path));
    }
  }
  if (tk.add_bos) w.AddBool("tokenizer.ggml.add_bos_token", *tk.add_bos);
  if (tk.add_eos) w.AddBool("tokenizer.ggml.add_eos_token", *tk.add_eos);
  if (!tk.rerank_template.empty()) {
    w.AddString("tokenizer.chat_template.rerank", tk.rerank_template);
  }
  return w;
}

Status WriteArchModel(const ArchModelSpec& spec, const std::string& path) {
  SPARROW_ASSIGN_OR_RETURN(GgufWriter w, MakeArchModel(spec));
  return w.Build().WriteFile(path);
}

}  // namespace sparrow::testing
