// wgc tokenize / wgc detokenize: text <-> token ids with a model's tokenizer (a GGUF file, a Hugging
// Face folder, or a tokenizer.json).
#include "cli/command.h"
#include "llm/generate/default_model.h"
#include "llm/tokenizer/loaders.h"
#include "llm/tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/json.h"

#include <cstdio>
#include <iostream>
#include <iterator>
#include <sstream>

namespace wgc::cli {
namespace {

std::string read_stdin() {
  std::ostringstream ss;
  ss << std::cin.rdbuf();
  return ss.str();
}

// --model (a .gguf file, a folder, or a tokenizer.json), else the built-in default model.
llm::Tokenizer tokenizer_of(Args& a) {
  auto model = a.option("--model");
  return llm::load_tokenizer(model ? std::filesystem::path(*model) : llm::default_model_path());
}

int tokenize(Args& a) {
  bool json = a.flag("--json");
  bool pieces = a.flag("--pieces");
  bool no_special = a.flag("--no-special");
  llm::Tokenizer tok = tokenizer_of(a);
  auto words = a.positionals();
  std::string text;
  if (words.empty() || (words.size() == 1 && words[0] == "-")) {
    text = read_stdin();
  } else {
    for (size_t i = 0; i < words.size(); ++i) text += (i ? " " : "") + words[i];
  }
  std::vector<int32_t> ids = tok.encode(text, !no_special);
  std::string out;
  if (json) {
    json::Value arr = json::Value::array();
    if (pieces) {
      for (int32_t id : ids) {
        json::Value o = json::Value::object();
        o.set("id", int64_t(id));
        o.set("piece", tok.token(id));
        arr.push_back(std::move(o));
      }
    } else {
      for (int32_t id : ids) arr.push_back(int64_t(id));
    }
    out = arr.dump() + "\n";
  } else if (pieces) {
    for (int32_t id : ids) {
      out += std::to_string(id);
      out += '\t';
      out += json::quote(tok.token(id));
      out += '\n';
    }
  } else {
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i) out += ' ';
      out += std::to_string(ids[i]);
    }
    out += '\n';
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

// Ids from arguments or stdin: integers separated by spaces, commas or JSON brackets.
std::vector<int32_t> parse_ids(const std::string& s) {
  std::vector<int32_t> ids;
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (c == ' ' || c == ',' || c == '[' || c == ']' || c == '\n' || c == '\t' || c == '\r') {
      ++i;
      continue;
    }
    size_t j = i;
    if (s[j] == '-') ++j;
    while (j < s.size() && s[j] >= '0' && s[j] <= '9') ++j;
    std::string num = s.substr(i, j - i);
    if (num.empty() || num == "-" || (j < s.size() && std::string(" ,[]\n\t\r").find(s[j]) == std::string::npos)) {
      size_t e = s.find_first_of(" ,[]\n\t\r", i);
      throw Error("wgc detokenize: '" + s.substr(i, e == std::string::npos ? std::string::npos : e - i) +
                  "' is not a token id");
    }
    long long v = std::stoll(num);
    if (v < INT32_MIN || v > INT32_MAX) throw Error("wgc detokenize: token id " + num + " out of range");
    ids.push_back(int32_t(v));
    i = j;
  }
  return ids;
}

int detokenize(Args& a) {
  bool skip = a.flag("--skip-special");
  llm::Tokenizer tok = tokenizer_of(a);
  auto words = a.positionals();
  std::string all;
  if (words.empty() || (words.size() == 1 && words[0] == "-")) {
    all = read_stdin();
  } else {
    for (auto& w : words) all += w + " ";
  }
  std::string text = tok.decode(parse_ids(all), skip) + "\n";
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

Register reg_tok{{"tokenize", "[--model MODEL] [--json] [--pieces] [--no-special] [TEXT... | -]",
                  "token ids of TEXT (stdin when absent) with a model's tokenizer (default: the built-in model)",
                  tokenize}};
Register reg_detok{{"detokenize", "[--model MODEL] [--skip-special] [IDS... | -]",
                    "text of token ids (spaces, commas or a JSON array; stdin when absent)", detokenize}};

}  // namespace
}  // namespace wgc::cli
