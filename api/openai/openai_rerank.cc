#include "api/openai/openai_rerank.h"

#include "api/openai/json_fields.h"

namespace sparrow::openai {

using json = nlohmann::json;

Result<RerankRequest> ParseRerankRequest(const json& b, std::string* param) {
  if (!b.is_object()) return Bad(param, "body", "must be a JSON object");
  RerankRequest r;
  SPARROW_RETURN_IF_ERROR(String(b, "model", &r.model, param));
  const json* query = Member(b, "query");
  if (query == nullptr) return Bad(param, "query", "is required");
  if (!query->is_string()) return Bad(param, "query", "must be a string");
  r.query = query->get<std::string>();
  const json* docs = Member(b, "documents");
  if (docs == nullptr) return Bad(param, "documents", "is required");
  if (!docs->is_array()) return Bad(param, "documents", "must be an array of strings");
  if (docs->empty()) return Bad(param, "documents", "is empty");
  r.documents.reserve(docs->size());
  for (size_t i = 0; i < docs->size(); ++i) {
    const json& d = (*docs)[i];
    const json* text = d.is_object() ? Member(d, "text") : nullptr;
    if (d.is_string()) {
      r.documents.push_back(d.get<std::string>());
    } else if (text != nullptr && text->is_string()) {  // Jina's and Cohere's {"text": ...}
      r.documents.push_back(text->get<std::string>());
    } else {
      if (param) *param = "documents";
      return InvalidArgument("'documents[" + std::to_string(i) +
                             "]' must be a string or an object with a string 'text'");
    }
  }
  SPARROW_RETURN_IF_ERROR(Integer(b, "top_n", 1, int64_t{1} << 30, &r.top_n, param));
  SPARROW_RETURN_IF_ERROR(Bool(b, "return_documents", &r.return_documents, param));
  return r;
}

}  // namespace sparrow::openai
