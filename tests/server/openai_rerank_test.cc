// The rerank request parser (llama-server's / Jina's / Cohere's /v1/rerank body): the shapes
// their clients send, and every refusal naming the field at fault.
#include "api/openai/openai_rerank.h"

#include <gtest/gtest.h>

namespace sparrow::openai {
namespace {

using json = nlohmann::json;

std::string Error(const json& body) {
  std::string param;
  auto r = ParseRerankRequest(body, &param);
  return r.ok() ? "ok" : param + ": " + r.status().message();
}

TEST(OpenAiRerankTest, ParsesStringsAndTextObjects) {
  std::string param;
  auto r = ParseRerankRequest(json{{"model", "m"},
                                   {"query", "what is a panda?"},
                                   {"documents", {"hi", {{"text", "a bear"}}}},
                                   {"top_n", 1},
                                   {"return_documents", true}},
                              &param);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->model, "m");
  EXPECT_EQ(r->query, "what is a panda?");
  EXPECT_EQ(r->documents, (std::vector<std::string>{"hi", "a bear"}));
  EXPECT_EQ(r->top_n, 1);
  EXPECT_TRUE(r->return_documents);
  auto plain = ParseRerankRequest(json{{"query", ""}, {"documents", {"x"}}}, &param);
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->top_n.has_value());
  EXPECT_FALSE(plain->return_documents);
}

TEST(OpenAiRerankTest, RefusalsNameTheField) {
  EXPECT_EQ(Error(json::array()), "body: 'body' must be a JSON object");
  EXPECT_EQ(Error(json{{"documents", {"x"}}}), "query: 'query' is required");
  EXPECT_EQ(Error(json{{"query", 3}, {"documents", {"x"}}}), "query: 'query' must be a string");
  EXPECT_EQ(Error(json{{"query", "q"}}), "documents: 'documents' is required");
  EXPECT_EQ(Error(json{{"query", "q"}, {"documents", "x"}}),
            "documents: 'documents' must be an array of strings");
  EXPECT_EQ(Error(json{{"query", "q"}, {"documents", json::array()}}),
            "documents: 'documents' is empty");
  EXPECT_EQ(Error(json{{"query", "q"}, {"documents", {"a", 7}}}),
            "documents: 'documents[1]' must be a string or an object with a string 'text'");
  EXPECT_EQ(Error(json{{"query", "q"}, {"documents", {{{"text", 1}}}}}),
            "documents: 'documents[0]' must be a string or an object with a string 'text'");
  EXPECT_EQ(Error(json{{"query", "q"}, {"documents", {"a"}}, {"top_n", 0}}).rfind("top_n:", 0), 0u);
  EXPECT_EQ(Error(json{{"query", "q"}, {"documents", {"a"}}, {"top_n", 1.5}}).rfind("top_n:", 0),
            0u);
  EXPECT_EQ(Error(json{{"query", "q"}, {"documents", {"a"}}, {"return_documents", "yes"}}),
            "return_documents: 'return_documents' must be true or false");
  EXPECT_EQ(Error(json{{"query", "q"}, {"documents", {"a"}}, {"model", 1}}),
            "model: 'model' must be a string");
}

}  // namespace
}  // namespace sparrow::openai
