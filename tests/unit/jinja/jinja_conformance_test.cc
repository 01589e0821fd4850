// Renders every chat template of tests/data/chat_templates (llama.cpp's models/templates) over
// every conversation of conversations.json and requires the bytes Python's jinja2 rendered in
// transformers' environment (expected.json, written by render_expected.py), or, where jinja2
// raised, a failure for the same reason.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "engine/jinja/jinja_template.h"

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

// What our error says where jinja2 raised `error` ("TypeError: message"): the same message,
// but for raise_exception and for filters jinja2 lacks, which we word our way.
std::string OurMessage(const std::string& error) {
  std::string type = error.substr(0, error.find(':'));
  std::string message = error.substr(error.find(':') + 2);
  if (type == "TemplateError") return "raise_exception: " + message;
  const std::string no_filter = "No filter named '";
  if (message.rfind(no_filter, 0) == 0) {
    std::string name = message.substr(no_filter.size());
    return "filter '" + name.substr(0, name.find('\'')) + "' is not supported";
  }
  return message;
}

// Whether one render agrees with jinja2's, reporting how it does not.
bool RendersLikeJinja2(const Template& tmpl, const nlohmann::ordered_json& context,
                       const nlohmann::ordered_json& want) {
  Result<std::string> got = tmpl.Render(context);
  if (want.contains("error")) {
    const std::string error = want["error"].get<std::string>();
    if (got.ok()) {
      ADD_FAILURE() << "jinja2 failed (" << error << ") but we rendered:\n" << *got;
      return false;
    }
    bool same_reason = got.status().message().find(OurMessage(error)) != std::string::npos;
    EXPECT_TRUE(same_reason) << "jinja2: " << error << "\nours: " << got.status().ToString();
    return same_reason;
  }
  if (!got.ok()) {
    ADD_FAILURE() << got.status().ToString();
    return false;
  }
  EXPECT_EQ(*got, want["output"].get<std::string>());
  return *got == want["output"].get<std::string>();
}

TEST(JinjaConformanceTest, EveryTemplateRendersLikeJinja2) {
  nlohmann::ordered_json conversations = ReadJson("conversations.json");
  nlohmann::ordered_json expected = ReadJson("expected.json");
  ASSERT_GT(expected.size(), 60u);
  ASSERT_GT(conversations.size(), 10u);
  int templates_matching = 0;
  for (auto it = expected.begin(); it != expected.end(); ++it) {
    SCOPED_TRACE(it.key());
    Result<Template> tmpl = Template::Parse(ReadFile(kDir + "/" + it.key()));
    EXPECT_TRUE(tmpl.ok()) << tmpl.status().ToString();
    if (!tmpl.ok()) continue;
    bool all = true;
    for (const auto& conv : conversations) {
      SCOPED_TRACE(conv["name"].get<std::string>());
      all =
          RendersLikeJinja2(*tmpl, conv["context"], it.value()[conv["name"].get<std::string>()]) &&
          all;
    }
    templates_matching += all ? 1 : 0;
  }
  std::printf("%d of %zu templates render exactly as jinja2 does\n", templates_matching,
              expected.size());
}

}  // namespace
}  // namespace sparrow::jinja
