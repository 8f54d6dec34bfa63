#include "llm/formats/gguf.h"
#include "llm/tokenizer/loaders.h"
#include "util/error.h"

namespace wgc::llm {

Tokenizer load_tokenizer(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  if (!fs::exists(path)) throw Error(path.string() + ": no such file or folder");
  if (fs::is_directory(path)) {
    if (fs::exists(path / "tokenizer.json")) return Tokenizer(spec_from_hf_file(path / "tokenizer.json"));
    std::vector<fs::path> ggufs;
    for (auto& e : fs::directory_iterator(path))
      if (e.path().extension() == ".gguf") ggufs.push_back(e.path());
    if (ggufs.size() == 1) return Tokenizer(spec_from_gguf(GgufFile::open(ggufs[0])));
    throw Error(path.string() + ": no tokenizer.json" +
                (ggufs.empty() ? std::string(" and no .gguf file") : std::string(" and several .gguf files")) +
                " in this folder");
  }
  if (path.extension() == ".gguf") return Tokenizer(spec_from_gguf(GgufFile::open(path)));
  if (path.extension() == ".json") return Tokenizer(spec_from_hf_file(path));
  // By content: GGUF magic, else JSON.
  std::FILE* fp = std::fopen(path.string().c_str(), "rb");
  char magic[4] = {};
  if (fp) {
    size_t got = std::fread(magic, 1, 4, fp);
    std::fclose(fp);
    if (got == 4 && std::string_view(magic, 4) == "GGUF") return Tokenizer(spec_from_gguf(GgufFile::open(path)));
  }
  return Tokenizer(spec_from_hf_file(path));
}

}  // namespace wgc::llm
