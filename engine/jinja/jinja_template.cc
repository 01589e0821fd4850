#include "engine/jinja/jinja_template.h"

#include <vector>

#include "engine/jinja/ast.h"
#include "engine/jinja/interpreter.h"
#include "engine/jinja/lexer.h"
#include "engine/jinja/parser.h"

namespace sparrow::jinja {

struct Template::Impl {
  jinja::Body body;
};

namespace {

// Value::FromJson recurses once per level; deeper documents are refused before it runs.
template <typename Json>
Status CheckJsonDepth(const Json& root) {
  constexpr size_t kMaxJsonDepth = 256;
  std::vector<std::pair<const Json*, size_t>> stack{{&root, 1}};
  while (!stack.empty()) {
    auto [j, depth] = stack.back();
    stack.pop_back();
    if (depth > kMaxJsonDepth) {
      return InvalidArgument("the chat template context nests deeper than " +
                             std::to_string(kMaxJsonDepth) + " levels");
    }
    if (j->is_structured()) {
      for (const auto& child : *j) stack.emplace_back(&child, depth + 1);
    }
  }
  return Status::Ok();
}

template <typename Json>
Result<std::string> RenderJson(const jinja::Body& body, const Json& context,
                               const RenderLimits& limits = RenderLimits{}) {
  if (!context.is_object()) return InvalidArgument("the chat template context must be an object");
  SPARROW_RETURN_IF_ERROR(CheckJsonDepth(context));
  // The context is the request's (bounded by its size) and is not charged to the budget.
  Value root = Value::FromJson(context);
  Interpreter interpreter{limits};
  return interpreter.Render(body, std::move(root.dict()));
}

}  // namespace

Result<Template> Template::Parse(std::string_view source) {
  return Parse(source, ParseOptions{});
}

Result<Template> Template::Parse(std::string_view source, const ParseOptions& options) {
  SPARROW_ASSIGN_OR_RETURN(std::vector<Token> tokens,
                           Lex(source, LexOptions{options.trim_blocks, options.lstrip_blocks}));
  SPARROW_ASSIGN_OR_RETURN(jinja::Body body, jinja::Parse(std::move(tokens)));
  auto impl = std::make_shared<Impl>();
  impl->body = std::move(body);
  return Template(std::move(impl));
}

Result<std::string> Template::Render(const nlohmann::json& context) const {
  return RenderJson(impl_->body, context);
}

Result<std::string> Template::Render(const nlohmann::ordered_json& context) const {
  return RenderJson(impl_->body, context);
}

Result<std::string> Template::Render(const nlohmann::ordered_json& context,
                                     const RenderLimits& limits) const {
  return RenderJson(impl_->body, context, limits);
}

}  // namespace sparrow::jinja
