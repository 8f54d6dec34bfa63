// Gemma 2/3 and Phi-3/3.5/4 chat templates rendered by wgc's Jinja engine as Jinja2 renders them when
// configured as transformers' apply_chat_template (tests/data/arch/chat_templates.json, written by
// scripts/render_chat_templates.py): every conversation, with and without the generation prompt,
// and the templates' own errors (Gemma's "System role not supported", role alternation).
#include "llm/chat/chat_template.h"
#include "test_util.h"
#include "util/json.h"

#include <filesystem>

using namespace wgc::llm;
namespace json = wgc::json;
namespace fs = std::filesystem;

namespace {

fs::path data_dir() { return fs::path(WGC_SOURCE_DIR) / "tests/data/arch"; }

void check_renders(const fs::path& file) {
  SCOPED_TRACE(file.string());
  json::Value g = json::parse_file(file);
  const json::Value& convs = g["conversations"];
  int checked = 0, errors = 0;
  for (const auto& [name, entry] : g["templates"].members()) {
    ChatTemplate t(entry["source"].as_string(), entry["bos_token"].as_string(), entry["eos_token"].as_string(), name);
    for (const auto& r : entry["renders"].items()) {
      ChatOptions opt;
      opt.add_generation_prompt = r["add_generation_prompt"].as_bool();
      const json::Value& messages = convs[r["conversation"].as_string()];
      std::string where = name + " / " + r["conversation"].as_string() + (opt.add_generation_prompt ? " +gen" : "");
      if (const json::Value* want = r.find("text")) {
        std::string got;
        try {
          got = t.render_json(messages, opt);
        } catch (const wgc::Error& e) {
          ADD_FAILURE() << where << ": " << e.what();
          continue;
        }
        EXPECT_EQ(got, want->as_string()) << where;
      } else {
        std::string msg = r["error"].as_string(), got = "(no error)";
        // (transformers' file records the exception's type before the template's message)
        if (msg.starts_with("TemplateError: ")) msg = msg.substr(15);
        try {
          got = t.render_json(messages, opt);
        } catch (const wgc::Error& e) {
          got = e.what();
        }
        EXPECT_NE(got.find(msg), std::string::npos) << where << ": want an error with '" << msg << "', got " << got;
        ++errors;
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 50);
  EXPECT_GE(errors, 8);
}

}  // namespace

TEST(ChatTemplateArch, AsJinja2RendersThem) {
  WGC_REQUIRE_FILE(data_dir() / "chat_templates.json");
  check_renders(data_dir() / "chat_templates.json");
}

// The same conversations through transformers' own apply_chat_template (made on the GPU machine by
// scripts/make_arch_fixtures.py with the model fixtures).
TEST(ChatTemplateArch, AsTransformersRendersThem) {
  WGC_REQUIRE_FILE(data_dir() / "chat_templates_transformers.json");
  check_renders(data_dir() / "chat_templates_transformers.json");
}
