// wgc pull REPO[/FILE]: a model from the Hugging Face Hub (or WGC_HF_ENDPOINT) into the cache
// (WGC_CACHE, default ~/.cache/wgc), where --model REPO[/FILE] then finds it (llm/hub/hub.h).
#include "cli/command.h"
#include "llm/hub/hub.h"
#include "util/error.h"
#include "util/format.h"

#include <cstdio>

namespace wgc::cli {
namespace {

struct Flags {
  std::string ref;
  std::string revision = "main";
  bool list = false;
};

int pull_cmd(const Flags& f);

// A pull that could not reach the hub: what to try, in the command's terms.
int pull(const Flags& f) {
  try {
    return pull_cmd(f);
  } catch (const llm::HubConnectionError& e) {
    throw Error(std::string(e.what()) + ". Run the same command again when the hub is reachable (what was pulled is " +
                "kept, a partial file resumes); --revision picks another branch, tag or commit of the repository");
  }
}

int pull_cmd(const Flags& f) {
  auto ref = llm::parse_hub_ref(f.ref);
  if (!ref) throw UsageError("'" + f.ref + "' is not a model on the hub (owner/name or owner/name/FILE)");
  llm::HubOptions o;
  o.revision = f.revision;
  if (f.list) {
    for (const auto& file : llm::hub_list(ref->repo, o))
      std::printf("%10s  %s\n", human_bytes(file.size).c_str(), file.path.c_str());
    return 0;
  }
  info("pulling " + ref->str() + " from " + llm::hub_endpoint(o) + " into " + llm::hub_cache_dir(o).string());
  auto r = llm::hub_pull(*ref, o, [](const llm::HubFile& file) {
    if (verbosity() != Verbosity::Quiet)
      std::fprintf(stderr, "wgc pull: %s (%s)\n", file.path.c_str(), human_bytes(file.size).c_str());
  });
  if (verbosity() != Verbosity::Quiet)
    std::fprintf(stderr, "wgc pull: %d downloaded, %d resumed, %d already there (%s received)\n", r.downloaded,
                 r.resumed, r.present, human_bytes(r.bytes).c_str());
  std::printf("%s\n", r.path.c_str());  // what --model takes (the name itself works too)
  return 0;
}

Register reg{{"pull", "download a model from the Hugging Face Hub into the cache (--model REPO then finds it)",
              [](CLI::App& app) {
                auto f = std::make_shared<Flags>();
                app.add_option("REPO", f->ref,
                               "owner/name (a folder: config.json, tokenizer, safetensors) or owner/name/FILE.gguf")
                    ->required();
                app.add_option("--revision", f->revision, "the branch, tag or commit");
                app.add_flag("--list", f->list, "list the repository's files instead");
                app.footer(
                    "The hub is WGC_HF_ENDPOINT (default https://huggingface.co); gated models need HF_TOKEN.\n"
                    "Files go to WGC_CACHE (default ~/.cache/wgc)/models/owner/name; a pull resumes an interrupted "
                    "one and checks each file's sha256.");
                return [f] { return pull(*f); };
              }}};

}  // namespace
}  // namespace wgc::cli
