// Speculative decoding in the real sparrowd, on the trained KJV pair (the 5M target and the 0.7M
// draft of the same tokenizer): greedy answers with a draft model (--model-draft) and with n-gram
// drafting (--spec-type ngram), several streams at once, are the plain server's token for token;
// /metrics and /admin/v1/status count what each source drafted and the target accepted; and a
// request's prediction drafts on a server without a drafter, with OpenAI's usage fields.
#include <gtest/gtest.h>

#include <future>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "tests/util/sparrowd_process.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

using json = nlohmann::json;
using testing::SparrowdProcess;

const std::vector<std::string> kPrompts = {
    "In the beginning God created",
    "And the LORD spake unto Moses, saying,",
    // Text that repeats itself, for n-gram drafting to find.
    "And it was so. And God called the firmament Heaven. And it was so. And God called",
    "Blessed are the poor in spirit: for theirs is",
};

std::string KjvModel(const std::string& name) {
  return testing::SharedDir() + "/kjv/models/" + name;
}

std::unique_ptr<SparrowdProcess> Start(std::vector<std::string> extra) {
  SparrowdProcess::Options o;
  o.args = {"--model",
            KjvModel("kjv-llama-5m-q8_0.gguf"),
            "--port",
            "0",
            "--grpc-port",
            "-1",
            "--threads",
            "1",
            "--admin-loopback-open",
            "1"};
  o.args.insert(o.args.end(), extra.begin(), extra.end());
  std::string error;
  auto p = SparrowdProcess::Start(SparrowdProcess::Binary(SPARROWD), o, &error);
  EXPECT_NE(p, nullptr) << error;
  return p;
}

json Complete(int port, const std::string& prompt, const json& extra = json::object()) {
  json body = {{"prompt", prompt}, {"max_tokens", 40}, {"temperature", 0}};
  body.update(extra);
  const auto [status, text] = testing::PostJsonHttp10(port, "/v1/completions", body.dump());
  EXPECT_EQ(status, 200) << text;
  const json r = json::parse(text, nullptr, false);
  return r.is_discarded() ? json::object() : r;
}

std::string Text(const json& r) {
  return r.contains("choices") ? r["choices"][0]["text"].get<std::string>() : "<no answer>";
}

// Every prompt at once: the streams decode (and verify) in one batch.
std::vector<std::string> AllAtOnce(int port) {
  std::vector<std::future<json>> f;
  for (const std::string& p : kPrompts) {
    f.push_back(std::async(std::launch::async, [port, p] { return Complete(port, p); }));
  }
  std::vector<std::string> texts;
  for (auto& x : f) texts.push_back(Text(x.get()));
  return texts;
}

std::string Get(int port, const std::string& path) {
  const std::string r =
      testing::RawExchange("127.0.0.1", port, "GET " + path + " HTTP/1.0\r\nHost: x\r\n\r\n");
  const size_t body = r.find("\r\n\r\n");
  return body == std::string::npos ? "" : r.substr(body + 4);
}

double Counter(const std::string& metrics, const std::string& name, const std::string& source) {
  std::smatch m;
  const std::regex re(name + "\\{source=\"" + source + "\"\\} ([0-9.e+]+)");
  return std::regex_search(metrics, m, re) ? std::stod(m[1]) : -1;
}

json SourceStatus(int port, const std::string& source) {
  const json s = json::parse(Get(port, "/admin/v1/status"), nullptr, false);
  if (s.is_discarded() || !s.contains("speculative")) return json::object();
  for (const json& x : s["speculative"]["sources"]) {
    if (x["source"] == source) return x;
  }
  return json::object();
}

class SparrowdSpeculativeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::FileExists(KjvModel("kjv-llama-5m-q8_0.gguf")) ||
        !testing::FileExists(KjvModel("kjv-llama-draft-0.7m-q8_0.gguf"))) {
      GTEST_SKIP() << "the KJV models are missing under " << testing::SharedDir() << "/kjv";
    }
    plain_ = Start({});
    ASSERT_NE(plain_, nullptr);
    for (const std::string& p : kPrompts)
      reference_.push_back(Text(Complete(plain_->http_port(), p)));
  }

  std::unique_ptr<SparrowdProcess> plain_;
  std::vector<std::string> reference_;  // the plain server's greedy answers, one at a time
};

TEST_F(SparrowdSpeculativeTest, ADraftModelChangesNoTokenAndIsCounted) {
  auto spec =
      Start({"--model-draft", KjvModel("kjv-llama-draft-0.7m-q8_0.gguf"), "--draft-max", "6"});
  ASSERT_NE(spec, nullptr);
  const int port = spec->http_port();
  EXPECT_EQ(AllAtOnce(port), reference_);

  const std::string metrics = Get(port, "/metrics");
  const double drafted = Counter(metrics, "sparrow_spec_draft_tokens_total", "draft");
  const double accepted = Counter(metrics, "sparrow_spec_accepted_tokens_total", "draft");
  EXPECT_GT(drafted, 0) << metrics;
  EXPECT_GT(accepted, 0) << "the trained pair agrees on some tokens";
  EXPECT_LE(accepted, drafted);
  EXPECT_EQ(Counter(metrics, "sparrow_spec_draft_tokens_total", "ngram"), 0);
  EXPECT_NE(metrics.find("sparrow_spec_draft_kv_bytes "), std::string::npos);

  const json status = json::parse(Get(port, "/admin/v1/status"), nullptr, false);
  ASSERT_FALSE(status.is_discarded());
  EXPECT_EQ(status["speculative"]["type"], "draft");
  const json draft = SourceStatus(port, "draft");
  EXPECT_EQ(draft.value("drafted_tokens", -1.0), drafted) << draft.dump();
  EXPECT_EQ(draft.value("accepted_tokens", -1.0), accepted);
  EXPECT_NEAR(draft.value("acceptance", -1.0), accepted / drafted, 1e-9);
  std::printf("[spec] draft model: %.0f of %.0f draft tokens accepted (%.1f%%)\n", accepted,
              drafted, 100 * accepted / drafted);
}

TEST_F(SparrowdSpeculativeTest, NgramDraftingChangesNoTokenAndIsCounted) {
  auto spec = Start({"--spec-type", "ngram", "--draft-max", "6"});
  ASSERT_NE(spec, nullptr);
  const int port = spec->http_port();
  EXPECT_EQ(AllAtOnce(port), reference_);
  const std::string metrics = Get(port, "/metrics");
  EXPECT_GT(Counter(metrics, "sparrow_spec_draft_tokens_total", "ngram"), 0) << metrics;
  EXPECT_EQ(Counter(metrics, "sparrow_spec_draft_tokens_total", "draft"), 0);
  const json status = json::parse(Get(port, "/admin/v1/status"), nullptr, false);
  ASSERT_FALSE(status.is_discarded());
  EXPECT_EQ(status["speculative"]["type"], "ngram");
}

// A prediction equal to the answer is accepted whole; one that is wrong after its first words
// is accepted that far; either way the answer is the plain one. On the plain server: a request's
// prediction drafts whatever the server's drafter.
TEST_F(SparrowdSpeculativeTest, APredictionDraftsOnAPlainServer) {
  const int port = plain_->http_port();
  const json right = Complete(port, kPrompts[0],
                              {{"prediction", {{"type", "content"}, {"content", reference_[0]}}}});
  EXPECT_EQ(Text(right), reference_[0]);
  ASSERT_TRUE(right["usage"].contains("completion_tokens_details")) << right.dump();
  const json& details = right["usage"]["completion_tokens_details"];
  const int64_t completion = right["usage"]["completion_tokens"].get<int64_t>();
  // The prediction is tokenized alone: its first token or two may split differently.
  EXPECT_GE(details["accepted_prediction_tokens"].get<int64_t>(), completion - 2) << right.dump();
  EXPECT_LE(details["rejected_prediction_tokens"].get<int64_t>(), 2) << right.dump();

  const std::string half = reference_[0].substr(0, reference_[0].size() / 2) + " zebra zebra";
  const json wrong =
      Complete(port, kPrompts[0], {{"prediction", {{"type", "content"}, {"content", half}}}});
  EXPECT_EQ(Text(wrong), reference_[0]);
  const json& wd = wrong["usage"]["completion_tokens_details"];
  EXPECT_GT(wd["accepted_prediction_tokens"].get<int64_t>(), 0) << wrong.dump();
  EXPECT_LT(wd["accepted_prediction_tokens"].get<int64_t>(),
            details["accepted_prediction_tokens"].get<int64_t>());
  EXPECT_GT(wd["rejected_prediction_tokens"].get<int64_t>(), 0) << wrong.dump();
  // The answer repeats itself, and drafting re-aligns with the prediction where it left it,
  // using the same part again: each of the prediction's tokens is counted once, so no more are
  // accepted than it has (about half the answer's, and the zebras).
  EXPECT_LE(wd["accepted_prediction_tokens"].get<int64_t>(), completion / 2 + 2) << wrong.dump();

  const std::string metrics = Get(port, "/metrics");
  EXPECT_GT(Counter(metrics, "sparrow_spec_accepted_tokens_total", "prediction"), 0) << metrics;
  const json status = json::parse(Get(port, "/admin/v1/status"), nullptr, false);
  ASSERT_FALSE(status.is_discarded());
  EXPECT_EQ(status["speculative"]["type"], "none");
}

}  // namespace
}  // namespace sparrow
