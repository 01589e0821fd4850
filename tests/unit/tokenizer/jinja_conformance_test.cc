// Renders every chat template of tests/data/chat_templates (llama.cpp's models/templates) over
// every conversation of conversations.json and requires the bytes Python's jinja2 rendered in
// transformers' environment (expected.json, written by render_expected.py), or a failure where
// jinja2 failed.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "engine/tokenizer/jinja/jinja_template.h"

namespace sparrow::jinja {
namespace {

const std::string kDir = SPARROW_CHAT_TEMPLATES_DIR;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

nlohmann::ordered_json ReadJson(const std::string& name) {
  return nlohmann::ordered_json::parse(ReadFile(kDir + "/" + name));
}

TEST(JinjaConformanceTest, EveryTemplateRendersLikeJinja2) {
  nlohmann::ordered_json conversations = ReadJson("conversations.json");
  nlohmann::ordered_json expected = ReadJson("expected.json");
  ASSERT_GT(expected.size(), 60u);
  int templates_matching = 0;
  for (auto it = expected.begin(); it != expected.end(); ++it) {
    const std::string& name = it.key();
    SCOPED_TRACE(name);
    Result<Template> tmpl = Template::Parse(ReadFile(kDir + "/" + name));
    EXPECT_TRUE(tmpl.ok()) << tmpl.status().ToString();
    if (!tmpl.ok()) continue;
    bool all = true;
    for (const auto& conv : conversations) {
      const std::string conv_name = conv["name"];
      SCOPED_TRACE(conv_name);
      const auto& want = it.value()[conv_name];
      Result<std::string> got = tmpl->Render(conv["context"]);
      if (want.contains("error")) {
        EXPECT_FALSE(got.ok()) << "jinja2 failed (" << want["error"].get<std::string>()
                               << ") but we rendered:\n"
                               << *got;
        all = all && !got.ok();
        continue;
      }
      EXPECT_TRUE(got.ok()) << got.status().ToString();
      if (!got.ok()) {
        all = false;
        continue;
      }
      EXPECT_EQ(*got, want["output"].get<std::string>());
      all = all && *got == want["output"].get<std::string>();
    }
    templates_matching += all ? 1 : 0;
  }
  std::printf("%d of %zu templates render exactly as jinja2 does\n", templates_matching,
              expected.size());
}

}  // namespace
}  // namespace sparrow::jinja
