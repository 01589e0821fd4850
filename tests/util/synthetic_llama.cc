#include "tests/util/synthetic_llama.h"

#include <cstring>
#include <memory>

#include "engine/common/check.h"
#include "engine/model/gguf_file.h"
#include "tests/util/test_paths.h"

namespace sparrow::testing {
namespace {

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// "blk.3.attn_q.weight" -> "attn_q"; "token_embd.weight" -> "token_embd".
std::string ShortName(std::string_view name) {
  if (name.starts_with("blk.")) name.remove_prefix(name.find('.', 4) + 1);
  if (name.ends_with(".weight")) name.remove_suffix(7);
  return std::string(name);
}

bool IsNorm(std::string_view name) {
  return name.find("_norm") != std::string_view::npos;
}

TensorType TypeOf(const LlamaModelSpec& spec, const std::string& name) {
  const std::string shortname = ShortName(name);
  if (auto it = spec.type_overrides.find(shortname); it != spec.type_overrides.end()) {
    return it->second;
  }
  if (IsNorm(name)) return TensorType::kF32;
  if (shortname == "token_embd") return spec.embd_type;
  if (shortname == "output") return spec.output_type;
  return spec.weight_type;
}

// Re-adds one metadata value read from a file.
void CopyValue(GgufWriter& w, const std::string& key, const GgufValue& v) {
  switch (v.type) {
    case GgufValueType::kU8:
      w.AddU8(key, static_cast<uint8_t>(std::get<uint64_t>(v.v)));
      break;
    case GgufValueType::kU16:
      w.AddU16(key, static_cast<uint16_t>(std::get<uint64_t>(v.v)));
      break;
    case GgufValueType::kU32:
      w.AddU32(key, static_cast<uint32_t>(std::get<uint64_t>(v.v)));
      break;
    case GgufValueType::kU64:
      w.AddU64(key, std::get<uint64_t>(v.v));
      break;
    case GgufValueType::kI8:
      w.AddI8(key, static_cast<int8_t>(std::get<int64_t>(v.v)));
      break;
    case GgufValueType::kI16:
      w.AddI16(key, static_cast<int16_t>(std::get<int64_t>(v.v)));
      break;
    case GgufValueType::kI32:
      w.AddI32(key, static_cast<int32_t>(std::get<int64_t>(v.v)));
      break;
    case GgufValueType::kI64:
      w.AddI64(key, std::get<int64_t>(v.v));
      break;
    case GgufValueType::kF32:
      w.AddF32(key, static_cast<float>(std::get<double>(v.v)));
      break;
    case GgufValueType::kF64:
      w.AddF64(key, std::get<double>(v.v));
      break;
    case GgufValueType::kBool:
      w.AddBool(key, std::get<bool>(v.v));
      break;
    case GgufValueType::kString:
      w.AddString(key, std::get<std::string_view>(v.v));
      break;
    case GgufValueType::kArray: {
      const GgufArray& a = std::get<GgufArray>(v.v);
      if (a.elem_type == GgufValueType::kString) {
        w.AddStringArray(key, std::vector<std::string>(a.strings.begin(), a.strings.end()));
        break;
      }
      static constexpr uint8_t kElemSize[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
      const auto et = static_cast<uint32_t>(a.elem_type);
      SPARROW_CHECK(et < sizeof(kElemSize) && kElemSize[et] != 0);
      std::vector<uint8_t> raw;
      GgufWriter::AppendU32(raw, et);
      GgufWriter::AppendU64(raw, a.size);
      raw.insert(raw.end(), a.data, a.data + a.size * kElemSize[et]);
      w.AddRaw(key, static_cast<uint32_t>(GgufValueType::kArray), std::move(raw));
      break;
    }
  }
}

Status AddStoriesVocab(GgufWriter& w) {
  const std::string path = ModelPath("stories260K.gguf");
  SPARROW_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> f, GgufFile::Open(path));
  for (const auto& [key, value] : f->metadata()) {
    if (key.starts_with("tokenizer.")) CopyValue(w, key, value);
  }
  return Status::Ok();
}

void AddSyntheticVocab(GgufWriter& w, uint32_t n_vocab) {
  SpmVocab v = MakeSyntheticSpmVocab(n_vocab);
  w.AddString("tokenizer.ggml.model", "llama");
  w.AddStringArray("tokenizer.ggml.tokens", v.tokens);
  w.AddArray<float>("tokenizer.ggml.scores", v.scores);
  w.AddArray<int32_t>("tokenizer.ggml.token_type", v.types);
  w.AddU32("tokenizer.ggml.unknown_token_id", 0);
  w.AddU32("tokenizer.ggml.bos_token_id", 1);
  w.AddU32("tokenizer.ggml.eos_token_id", 2);
}

}  // namespace

SpmVocab MakeSyntheticSpmVocab(uint32_t n_vocab) {
  SPARROW_CHECK(n_vocab >= 3);
  SpmVocab v;
  auto add = [&](std::string piece, float score, int32_t type) {
    if (v.tokens.size() >= n_vocab) return;
    v.tokens.push_back(std::move(piece));
    v.scores.push_back(score);
    v.types.push_back(type);
  };
  // llama.cpp token types: 1 normal, 2 unknown, 3 control, 6 byte.
  add("<unk>", 0.0f, 2);
  add("<s>", 0.0f, 3);
  add("</s>", 0.0f, 3);
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
    add(buf, 0.0f, 6);
  }
  // Pieces: "▁", then strings of 1, 2, ... symbols, each alone and after "▁"; all distinct.
  const std::string kSpace = "\xe2\x96\x81";  // U+2581, SentencePiece's word-start marker
  std::vector<std::string> symbols;
  for (char c = 'a'; c <= 'z'; ++c) symbols.emplace_back(1, c);
  for (char c = 'A'; c <= 'Z'; ++c) symbols.emplace_back(1, c);
  for (char c : std::string("0123456789.,!?'\"-:;()")) symbols.emplace_back(1, c);
  float score = 0.0f;
  add(kSpace, score, 1);
  std::vector<std::string> level = symbols;
  while (v.tokens.size() < n_vocab) {
    for (const std::string& s : level) add(s, score -= 1.0f, 1);
    for (const std::string& s : level) add(kSpace + s, score -= 1.0f, 1);
    const size_t need = n_vocab - v.tokens.size();
    std::vector<std::string> next;
    for (size_t i = 0; i < level.size() && next.size() < need; ++i) {
      for (size_t j = 0; j < symbols.size() && next.size() < need; ++j) {
        next.push_back(level[i] + symbols[j]);
      }
    }
    level = std::move(next);
  }
  return v;
}

std::vector<std::pair<std::string, std::vector<uint64_t>>> LlamaTensorShapes(
    const LlamaModelSpec& spec) {
  const uint64_t n_embd = spec.n_embd, n_ff = spec.n_ff;
  const uint64_t n_vocab = spec.vocab == LlamaModelSpec::Vocab::kStories260K ? 512 : spec.n_vocab;
  const uint64_t hd = spec.head_dim_or_default();
  const uint64_t q_dim = hd * spec.n_head, kv_dim = hd * spec.n_head_kv;
  std::vector<std::pair<std::string, std::vector<uint64_t>>> shapes = {
      {"token_embd.weight", {n_embd, n_vocab}},
      {"output_norm.weight", {n_embd}},
  };
  if (!spec.tied_output) shapes.push_back({"output.weight", {n_embd, n_vocab}});
  for (uint32_t l = 0; l < spec.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    shapes.push_back({p + "attn_norm.weight", {n_embd}});
    shapes.push_back({p + "attn_q.weight", {n_embd, q_dim}});
    shapes.push_back({p + "attn_k.weight", {n_embd, kv_dim}});
    shapes.push_back({p + "attn_v.weight", {n_embd, kv_dim}});
    shapes.push_back({p + "attn_output.weight", {q_dim, n_embd}});
    shapes.push_back({p + "ffn_norm.weight", {n_embd}});
    shapes.push_back({p + "ffn_gate.weight", {n_embd, n_ff}});
    shapes.push_back({p + "ffn_up.weight", {n_embd, n_ff}});
    if (spec.predictor_rank == 0) {
      shapes.push_back({p + "ffn_down.weight", {n_ff, n_embd}});
    } else {
      shapes.push_back({p + "ffn_down_t.weight", {n_embd, n_ff}});
      shapes.push_back({p + "fc1.weight", {n_embd, spec.predictor_rank}});
      shapes.push_back({p + "fc2.weight", {spec.predictor_rank, n_ff}});
    }
  }
  return shapes;
}

std::vector<float> LlamaTensorValues(const LlamaModelSpec& spec, std::string_view name) {
  for (const auto& [tname, dims] : LlamaTensorShapes(spec)) {
    if (tname != name) continue;
    uint64_t n = 1;
    for (uint64_t d : dims) n *= d;
    std::vector<float> values(n);
    uint64_t state = spec.seed ^ Fnv1a(name);
    const float base = IsNorm(name) ? 1.0f : 0.0f;
    for (float& x : values) {
      // 24 random bits -> uniform in [-1, 1).
      const float u = static_cast<float>(SplitMix64(state) >> 40) * (2.0f / 16777216.0f) - 1.0f;
      x = base + spec.weight_scale * u;
    }
    return values;
  }
  SPARROW_CHECK(false && "LlamaTensorValues: no such tensor");
  return {};
}

Result<GgufWriter> MakeLlamaModel(const LlamaModelSpec& spec) {
  SPARROW_CHECK(spec.n_head > 0 && spec.n_head_kv > 0 && spec.n_head % spec.n_head_kv == 0);
  LlamaModelSpec s = spec;
  if (s.vocab == LlamaModelSpec::Vocab::kStories260K) s.n_vocab = 512;
  const uint32_t hd = s.head_dim_or_default();
  SPARROW_CHECK(hd > 0);

  GgufWriter w(s.gguf_version);
  const std::string a = s.arch + ".";
  w.AddString("general.architecture", s.arch);
  w.AddString("general.name", "sparrow-synthetic-" + s.arch);
  if (s.alignment != 0) w.SetAlignment(s.alignment);
  w.AddU32(a + "context_length", s.n_ctx);
  w.AddU32(a + "embedding_length", s.n_embd);
  w.AddU32(a + "block_count", s.n_layer);
  w.AddU32(a + "feed_forward_length", s.n_ff);
  w.AddU32(a + "attention.head_count", s.n_head);
  w.AddU32(a + "attention.head_count_kv", s.n_head_kv);
  w.AddU32(a + "rope.dimension_count", s.rope_dim ? s.rope_dim : hd);
  w.AddF32(a + "attention.layer_norm_rms_epsilon", s.rms_eps);
  w.AddF32(a + "rope.freq_base", s.rope_freq_base);
  if (hd * s.n_head != s.n_embd) {
    w.AddU32(a + "attention.key_length", hd);
    w.AddU32(a + "attention.value_length", hd);
  }
  if (s.predictor_rank > 0) {
    w.set_magic("PWRI");
    w.AddF32("powerinfer.sparse_threshold", s.sparse_threshold);
  }
  if (s.vocab == LlamaModelSpec::Vocab::kStories260K) {
    SPARROW_RETURN_IF_ERROR(AddStoriesVocab(w));
  } else {
    AddSyntheticVocab(w, s.n_vocab);
  }

  for (const auto& [name, dims] : LlamaTensorShapes(s)) {
    const std::vector<float> values = LlamaTensorValues(s, name);
    w.AddTensorF32(name, TypeOf(s, name), dims, values, s.quantize);
  }
  return w;
}

Status WriteLlamaModel(const LlamaModelSpec& spec, const std::string& path) {
  SPARROW_ASSIGN_OR_RETURN(GgufWriter w, MakeLlamaModel(spec));
  return w.WriteFile(path);
}

}  // namespace sparrow::testing
