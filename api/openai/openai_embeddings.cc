#include "api/openai/openai_embeddings.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "api/openai/base64.h"
#include "api/openai/json_fields.h"

namespace sparrow::openai {

using json = nlohmann::json;

namespace {

// A list of token ids (`field` for errors): non-negative integers that fit an int32.
Status TokenList(const json& j, const std::string& field, std::vector<int32_t>* out,
                 std::string* param) {
  out->reserve(j.size());
  for (size_t k = 0; k < j.size(); ++k) {
    const json& t = j[k];
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > INT32_MAX) {
      if (param) *param = "input";
      return InvalidArgument("'" + field + "[" + std::to_string(k) +
                             "]' must be a token id (a non-negative integer)");
    }
    out->push_back(static_cast<int32_t>(t.get<int64_t>()));
  }
  return Status::Ok();
}

Status Input(const json& in, EmbeddingsRequest* r, std::string* param) {
  const char* kShape =
      "must be a string, an array of strings, an array of token ids or an array "
      "of arrays of token ids";
  if (in.is_string()) {
    r->texts.push_back(in.get<std::string>());
    return Status::Ok();
  }
  if (!in.is_array()) return Bad(param, "input", kShape);
  if (in.empty()) return Bad(param, "input", "is empty");
  if (in[0].is_number()) {  // one input as token ids
    r->token_lists.emplace_back();
    return TokenList(in, "input", &r->token_lists.back(), param);
  }
  for (size_t i = 0; i < in.size(); ++i) {
    const std::string field = "input[" + std::to_string(i) + "]";
    const json& e = in[i];
    if (e.is_string() && r->token_lists.empty()) {
      r->texts.push_back(e.get<std::string>());
    } else if (e.is_array() && r->texts.empty()) {
      r->token_lists.emplace_back();
      SPARROW_RETURN_IF_ERROR(TokenList(e, field, &r->token_lists.back(), param));
    } else {
      if (param) *param = "input";
      return InvalidArgument("'" + field + "' " +
                             (e.is_string() || e.is_array()
                                  ? std::string("mixes texts and token lists in one input")
                                  : std::string(kShape)));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<EmbeddingsRequest> ParseEmbeddingsRequest(const json& b, std::string* param) {
  if (!b.is_object()) return Bad(param, "body", "must be a JSON object");
  EmbeddingsRequest r;
  SPARROW_RETURN_IF_ERROR(String(b, "model", &r.model, param));
  auto in = b.find("input");
  if (in == b.end() || in->is_null()) return Bad(param, "input", "is required");
  SPARROW_RETURN_IF_ERROR(Input(*in, &r, param));
  std::string format;
  SPARROW_RETURN_IF_ERROR(String(b, "encoding_format", &format, param));
  if (format == "base64") {
    r.base64 = true;
  } else if (!format.empty() && format != "float") {
    return Bad(param, "encoding_format", "must be float or base64, got '" + format + "'");
  }
  SPARROW_RETURN_IF_ERROR(Integer(b, "dimensions", 1, int64_t{1} << 20, &r.dimensions, param));
  SPARROW_RETURN_IF_ERROR(String(b, "pooling", &r.pooling, param));
  SPARROW_RETURN_IF_ERROR(String(b, "user", &r.user, param));
  return r;
}

std::string Base64Floats(std::span<const float> v) {
  std::string bytes(v.size() * sizeof(float), '\0');
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t u = std::bit_cast<uint32_t>(v[i]);
    for (int k = 0; k < 4; ++k) bytes[i * 4 + k] = static_cast<char>((u >> (8 * k)) & 0xff);
  }
  return Base64Encode(bytes);
}

}  // namespace sparrow::openai
