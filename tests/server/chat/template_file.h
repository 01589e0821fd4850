#pragma once
// A real model's chat template from tests/data/chat_templates, for the tests of server/chat
// (built with SPARROW_SOURCE_DIR).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace sparrow::server {

inline std::string ReadChatTemplate(const std::string& name) {
  std::ifstream in(std::string(SPARROW_SOURCE_DIR) + "/tests/data/chat_templates/" + name);
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_FALSE(s.str().empty()) << name;
  return s.str();
}

}  // namespace sparrow::server
