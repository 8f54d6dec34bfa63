// wgc list / wgc rm: the models in the cache (`wgc pull` puts them there) and the built-in one,
// by the names --model takes.
#include "cli/command.h"
#include "cli/llm_flags.h"
#include "llm/formats/model_file.h"
#include "llm/generate/default_model.h"
#include "llm/hub/hub.h"
#include "util/error.h"
#include "util/format.h"
#include "util/json.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace wgc::cli {
namespace {

namespace fs = std::filesystem;

struct Row {
  std::string name;  // the short name --model takes
  std::string ref;   // owner/name[/FILE], or "built-in"
  fs::path path;
  uint64_t bytes = 0;
  std::string type = "?", arch = "?";
  bool complete = true;
};

// The short name of a pulled model: a file's stem, a folder's repository name.
std::string short_name(const llm::HubRef& r) {
  if (r.file.empty()) return r.repo.substr(r.repo.find('/') + 1);
  return fs::path(r.file).stem().string();
}

// The weights' type (the type holding the most bytes: Q4_K for a Q4_K_M file) and architecture,
// from the file's header.
void describe(Row& row) {
  try {
    llm::OpenOptions o;
    o.progress = false;
    o.prefault = false;
    llm::ModelFile m = llm::open_model(row.path, o);
    std::map<std::string, uint64_t> by_type;
    for (const auto& t : m.tensors()) by_type[std::string(to_string(t.type))] += t.data.size();
    auto most = std::max_element(by_type.begin(), by_type.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
    if (most != by_type.end()) row.type = most->first;
    row.arch = std::string(to_string(m.config().architecture));
  } catch (const Error& e) {
    info(row.path.string() + ": " + e.what());
  }
}

uint64_t size_on_disk(const fs::path& p) {
  std::error_code ec;
  if (fs::is_regular_file(p, ec)) return fs::file_size(p, ec);
  uint64_t n = 0;
  for (auto it = fs::recursive_directory_iterator(p, ec); !ec && it != fs::end(it); it.increment(ec))
    if (it->is_regular_file(ec)) n += it->file_size(ec);
  return n;
}

struct ListFlags {
  bool json = false;
};

int list_cmd(const ListFlags& f) {
  std::vector<Row> rows;
  try {
    fs::path builtin = llm::default_model_path();
    Row r{kBuiltinModelName, "built-in", builtin, size_on_disk(builtin)};
    describe(r);
    rows.push_back(r);
  } catch (const Error& e) {
    warn(std::string("no built-in model: ") + e.what());
  }
  for (const auto& m : llm::hub_cached_models()) {
    Row r{short_name(m.ref), m.ref.str(), m.path, m.bytes};
    r.complete = m.complete;
    if (m.complete)
      describe(r);
    else
      r.type = r.arch = "-";
    rows.push_back(r);
  }
  if (f.json) {
    json::Value a = json::Value::array();
    for (const auto& r : rows) {
      json::Value o = json::Value::object();
      o.set("name", r.name);
      o.set("model", r.ref);
      o.set("path", r.path.string());
      o.set("bytes", r.bytes);
      o.set("type", r.type);
      o.set("architecture", r.arch);
      o.set("complete", r.complete);
      a.push_back(std::move(o));
    }
    std::printf("%s\n", a.dump(1).c_str());
    return 0;
  }
  size_t w = 4;
  for (const auto& r : rows) w = std::max(w, r.name.size());
  std::printf("%-*s  %9s  %-6s  %-8s  %s\n", int(w), "NAME", "SIZE", "TYPE", "ARCH", "MODEL (--model takes either)");
  for (const auto& r : rows)
    std::printf("%-*s  %9s  %-6s  %-8s  %s%s\n", int(w), r.name.c_str(), human_bytes(r.bytes).c_str(), r.type.c_str(),
                r.arch.c_str(), r.ref.c_str(), r.complete ? "" : "  (interrupted pull: wgc pull resumes it)");
  if (verbosity() != Verbosity::Quiet)
    std::fprintf(stderr, "cache: %s (WGC_CACHE)\n", (llm::hub_cache_dir() / "models").string().c_str());
  return 0;
}

struct RmFlags {
  std::vector<std::string> names;
};

int rm_cmd(const RmFlags& f) {
  if (f.names.empty()) throw UsageError("give the models to remove: owner/name[/FILE] or a name wgc list shows");
  // Every name is checked before anything is removed.
  std::vector<llm::HubRef> refs;
  for (const auto& n : f.names) {
    if (is_builtin_name(n)) throw Error("wgc rm: " + n + " is the built-in model: it is part of wgc, not the cache");
    if (auto ref = llm::parse_hub_ref(n)) {
      refs.push_back(*ref);
      continue;
    }
    auto found = llm::hub_find_name(n);
    if (found.empty()) throw Error("wgc rm: no pulled model is named " + n + " (wgc list shows them)");
    if (found.size() > 1) {
      std::string names;
      for (const auto& m : found) names += "\n  " + m.ref.str();
      throw Error("wgc rm: the name " + n + " fits several pulled models; give one of them:" + names);
    }
    refs.push_back(found[0].ref);
  }
  for (const auto& r : refs) {
    uint64_t freed = llm::hub_remove(r);
    if (verbosity() != Verbosity::Quiet)
      std::fprintf(stderr, "wgc rm: removed %s (%s)\n", r.str().c_str(), human_bytes(freed).c_str());
  }
  return 0;
}

Register reg_list{
    {"list", "the models --model finds by name: the built-in one and those pulled into the cache", [](CLI::App& app) {
       auto f = std::make_shared<ListFlags>();
       app.add_flag("--json", f->json, "print a JSON array");
       app.footer(
           "The cache is WGC_CACHE (default ~/.cache/wgc)/models; wgc pull fills it, wgc rm "
           "empties it.");
       return [f] { return list_cmd(*f); };
     }}};

Register reg_rm{
    {"rm", "remove pulled models from the cache (owner/name[/FILE], or a name wgc list shows)", [](CLI::App& app) {
       auto f = std::make_shared<RmFlags>();
       add_rest(app, f->names, "MODEL ...",
                "owner/name (the repository's whole folder), owner/name/FILE, or a name wgc list shows");
       return [f] { return rm_cmd(*f); };
     }}};

}  // namespace
}  // namespace wgc::cli
