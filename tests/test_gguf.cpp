// GGUF reader and writer: every metadata type (incl. nested arrays) round-trips through GgufWriter,
// typed getters convert or refuse, alignment and tensor data are right (given or generated, written
// with any thread count), the fixtures read, and every kind of bad file gives a wgc::Error naming
// the file and the problem (never a crash). Read from a ByteSource (the browser's download), the
// header gives the same file, read in bounded pieces, and the same errors.
#include "llm/formats/gguf.h"
#include "llm/formats/gguf_writer.h"
#include "memory_source.h"
#include "test_util.h"

#include <cstring>
#include <fstream>

using namespace wgc::llm;
namespace fs = std::filesystem;

namespace {

using wgc::test::temp_dir;

std::vector<std::byte> read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::vector<char> c((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto b = std::as_bytes(std::span(c));
  return {b.begin(), b.end()};
}

fs::path write_file(const std::string& name, std::span<const std::byte> bytes) {
  fs::path p = temp_dir() / name;
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  return p;
}

// Raw little-endian bytes for hand-made files.
struct Bytes {
  std::vector<std::byte> b;
  Bytes& raw(std::string_view s) {
    for (char c : s) b.push_back(std::byte(c));
    return *this;
  }
  Bytes& u32(uint32_t v) {
    GgufWriter::encode_u32(b, v);
    return *this;
  }
  Bytes& u64(uint64_t v) {
    GgufWriter::encode_u64(b, v);
    return *this;
  }
  Bytes& str(std::string_view s) {
    GgufWriter::encode_string(b, s);
    return *this;
  }
  Bytes& u8(uint8_t v) {
    b.push_back(std::byte(v));
    return *this;
  }
  Bytes& zeros(size_t n) {
    b.resize(b.size() + n);
    return *this;
  }
};

// Header of a v3 file with the given counts.
Bytes header(uint64_t n_tensors, uint64_t n_kv) {
  Bytes h;
  h.raw("GGUF").u32(3).u64(n_tensors).u64(n_kv);
  return h;
}

// Opening the bytes as a file must throw a wgc::Error whose message holds every `parts`.
void expect_error(const std::string& name, const Bytes& bytes, std::vector<std::string> parts) {
  fs::path p = write_file(name, bytes.b);
  try {
    GgufFile::open(p);
    ADD_FAILURE() << name << ": no error";
  } catch (const wgc::Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(p.string()), std::string::npos) << name << ": message does not name the file: " << msg;
    for (const auto& part : parts)
      EXPECT_NE(msg.find(part), std::string::npos) << name << ": message lacks '" << part << "': " << msg;
  }
}

std::vector<std::byte> f32_bytes(const std::vector<float>& v) {
  auto s = std::as_bytes(std::span(v));
  return {s.begin(), s.end()};
}

// A small valid file with every metadata type and two tensors.
GgufWriter sample_writer(uint32_t alignment = 32) {
  GgufWriter w(3, alignment);
  w.add_u8("t.u8", 200);
  w.add_i8("t.i8", -100);
  w.add_u16("t.u16", 60000);
  w.add_i16("t.i16", -30000);
  w.add_u32("t.u32", 4000000000u);
  w.add_i32("t.i32", -2000000000);
  w.add_u64("t.u64", 18000000000000000000ull);
  w.add_i64("t.i64", -9000000000000000000ll);
  w.add_f32("t.f32", 0.15625f);
  w.add_f64("t.f64", 1e300);
  w.add_bool("t.bool", true);
  w.add_string("t.str", "héllo \xF0\x9F\x9A\x80");
  std::vector<std::string> strs = {"a", "", "ccc"};
  w.add_string_array("t.strs", strs);
  std::vector<float> fl = {1.5f, -2.f};
  w.add_f32_array("t.f32s", fl);
  std::vector<int32_t> in = {-1, 7, 1 << 30};
  w.add_i32_array("t.i32s", in);
  // [[1u16, 2u16], [], [[ "x" ]]]: an array of arrays, one of them holding an array of strings.
  std::vector<uint16_t> u16s = {1, 2};
  std::vector<std::string> x = {"x"};
  const GgufMetaValue strings_x[] = {GgufMetaValue::strings(x)};
  const GgufMetaValue nested[] = {GgufMetaValue::array(std::span<const uint16_t>(u16s)),
                                  GgufMetaValue::array(std::span<const int64_t>()),
                                  GgufMetaValue::array(GgufType::Array, strings_x)};
  w.add("t.nested", GgufMetaValue::array(GgufType::Array, nested));
  w.add("t.bools", GgufMetaValue::bool_array({false, true}));

  std::vector<float> a = {1, 2, 3, 4, 5, 6};
  w.add_tensor("a", TensorType::F32, {3, 2}, f32_bytes(a));
  std::vector<std::byte> q8(2 * 34, std::byte(1));
  w.add_tensor("b.q8", TensorType::Q8_0, {64}, q8);
  return w;
}

}  // namespace

TEST(Gguf, EveryValueTypeRoundTrips) {
  auto bytes = sample_writer().to_bytes();
  auto f = GgufFile::parse(bytes, "sample");
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.metadata().size(), 17u);
  EXPECT_EQ(f.metadata()[0].key, "t.u8");  // file order
  EXPECT_EQ(f.find("t.u8")->type(), GgufType::U8);
  EXPECT_EQ(*f.find("t.u8")->to_u64(), 200u);
  EXPECT_EQ(*f.find("t.i8")->to_i64(), -100);
  EXPECT_EQ(*f.find("t.u16")->to_u64(), 60000u);
  EXPECT_EQ(*f.find("t.i16")->to_i64(), -30000);
  EXPECT_EQ(f.get_u32("t.u32"), 4000000000u);
  EXPECT_EQ(f.get_i32("t.i32"), -2000000000);
  EXPECT_EQ(f.get_u64("t.u64"), 18000000000000000000ull);
  EXPECT_FALSE(f.find("t.u64")->to_i64());  // does not fit
  EXPECT_EQ(*f.find("t.i64")->to_i64(), -9000000000000000000ll);
  EXPECT_EQ(f.get_f32("t.f32"), 0.15625f);
  EXPECT_EQ(*f.find("t.f64")->to_f64(), 1e300);
  EXPECT_TRUE(f.get_bool("t.bool"));
  EXPECT_EQ(f.get_string("t.str"), "héllo \xF0\x9F\x9A\x80");
  EXPECT_EQ(f.get_string_array("t.strs"), (std::vector<std::string>{"a", "", "ccc"}));
  EXPECT_EQ(f.get_f32_array("t.f32s"), (std::vector<float>{1.5f, -2.f}));
  EXPECT_EQ(f.get_i32_array("t.i32s"), (std::vector<int32_t>{-1, 7, 1 << 30}));

  const GgufValue* n = f.find("t.nested");
  ASSERT_TRUE(n);
  ASSERT_TRUE(n->is_array());
  EXPECT_EQ(n->array_type(), GgufType::Array);
  ASSERT_EQ(n->size(), 3u);
  EXPECT_EQ(n->at(0).array_type(), GgufType::U16);
  EXPECT_EQ(*n->at(0).at(1).to_u64(), 2u);
  EXPECT_EQ(n->at(1).size(), 0u);
  EXPECT_EQ(n->at(1).array_type(), GgufType::I64);
  EXPECT_EQ(*n->at(2).at(0).at(0).to_string(), "x");
  EXPECT_THROW(n->at(3), wgc::Error);
  EXPECT_EQ(n->describe(), "[3 x array] [[2 x u16] [1, 2], [0 x i64] [], [1 x array] [[1 x string] [\"x\"]]]");

  const GgufValue* bools = f.find("t.bools");
  EXPECT_FALSE(*bools->at(0).to_bool());
  EXPECT_TRUE(*bools->at(1).to_bool());
}

TEST(Gguf, TypedGettersConvertOrRefuse) {
  auto bytes = sample_writer().to_bytes();
  auto f = GgufFile::parse(bytes, "sample");
  // Defaults when absent.
  EXPECT_EQ(f.get_u32("nope", 7), 7u);
  EXPECT_EQ(f.get_string("nope", "dflt"), "dflt");
  EXPECT_EQ(f.get_f32("nope", 2.5f), 2.5f);
  EXPECT_TRUE(f.get_bool("nope", true));
  EXPECT_TRUE(f.get_string_array("nope").empty());
  EXPECT_EQ(f.find("nope"), nullptr);
  // Conversions where the value fits.
  EXPECT_EQ(f.get_u32("t.u8"), 200u);
  EXPECT_EQ(f.get_i32("t.i16"), -30000);
  EXPECT_EQ(f.get_f32("t.u8"), 200.f);
  // Refusals name the file and key.
  auto refuses = [&](auto fn, const char* key) {
    try {
      fn();
      ADD_FAILURE() << key << ": no error";
    } catch (const wgc::Error& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find("sample"), std::string::npos) << msg;
      EXPECT_NE(msg.find(key), std::string::npos) << msg;
    }
  };
  refuses([&] { f.get_u32("t.i8"); }, "t.i8");       // negative
  refuses([&] { f.get_u32("t.u64"); }, "t.u64");     // too big
  refuses([&] { f.get_i32("t.u32"); }, "t.u32");     // too big
  refuses([&] { f.get_string("t.u32"); }, "t.u32");  // not a string
  refuses([&] { f.get_f32("t.str"); }, "t.str");     // not a number
  refuses([&] { f.get_bool("t.str"); }, "t.str");    // not a bool
  refuses([&] { f.get_string_array("t.f32s"); }, "t.f32s");
  refuses([&] { f.get_i32_array("t.f32s"); }, "t.f32s");
  refuses([&] { f.get_i32_array("t.nested"); }, "t.nested");
  refuses([&] { f.get_f32_array("t.strs"); }, "t.strs");
  EXPECT_EQ(f.get_f32_array("t.i32s"), (std::vector<float>{-1.f, 7.f, float(1 << 30)}));
}

TEST(Gguf, TensorsAndAlignment) {
  for (uint32_t alignment : {32u, 64u, 256u}) {
    auto bytes = sample_writer(alignment).to_bytes();
    auto f = GgufFile::parse(bytes, "sample");
    EXPECT_EQ(f.alignment(), alignment);
    EXPECT_EQ(f.data_offset() % alignment, 0u);
    ASSERT_EQ(f.tensors().size(), 2u);
    const GgufTensorInfo* a = f.find_tensor("a");
    ASSERT_TRUE(a);
    EXPECT_EQ(a->ne, (std::vector<int64_t>{3, 2}));
    EXPECT_EQ(a->torch_shape(), (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(a->type, TensorType::F32);
    EXPECT_EQ(a->bytes, 24u);
    auto d = f.tensor_data(*a);
    std::vector<float> got(6);
    std::memcpy(got.data(), d.data(), 24);
    EXPECT_EQ(got, (std::vector<float>{1, 2, 3, 4, 5, 6}));
    const GgufTensorInfo* b = f.find_tensor("b.q8");
    ASSERT_TRUE(b);
    EXPECT_EQ(b->offset % alignment, 0u);
    EXPECT_EQ(b->bytes, 68u);
    EXPECT_EQ(f.tensor_data(*b).size(), 68u);
    EXPECT_EQ(f.find_tensor("c"), nullptr);
  }
}

TEST(Gguf, Version2AndOpenFromFile) {
  GgufWriter w(2);
  w.add_string("general.architecture", "llama");
  auto p = temp_dir() / "v2.gguf";
  w.write(p);
  auto f = GgufFile::open(p);
  EXPECT_EQ(f.version(), 2u);
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  EXPECT_TRUE(f.mapping());
  EXPECT_EQ(f.name(), p.string());
  // Moving keeps views valid.
  GgufFile g = std::move(f);
  EXPECT_EQ(g.get_string("general.architecture"), "llama");
}

TEST(Gguf, FixtureTinyLlama2) {
  auto path = wgc::test::fixtures_dir() / "tiny-llama2-f32" / "tiny-llama2-f32-f32.gguf";
  WGC_REQUIRE_FILE(path);
  auto f = GgufFile::open(path);
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  EXPECT_EQ(f.get_u32("llama.block_count"), 2u);
  EXPECT_EQ(f.get_u32("llama.embedding_length"), 16u);
  EXPECT_EQ(f.get_string("tokenizer.ggml.model"), "llama");
  auto tokens = f.get_string_array("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.size(), 32000u);
  EXPECT_EQ(tokens[1], "<s>");
  EXPECT_EQ(tokens[2], "</s>");
  EXPECT_EQ(f.find("tokenizer.ggml.tokens")->strings()[22557], tokens[22557]);
  EXPECT_EQ(f.get_f32_array("tokenizer.ggml.scores").size(), 32000u);
  EXPECT_EQ(f.get_i32_array("tokenizer.ggml.token_type").size(), 32000u);
  EXPECT_EQ(f.get_u32("tokenizer.ggml.bos_token_id"), 1u);
  EXPECT_TRUE(f.get_bool("tokenizer.ggml.add_bos_token"));
  EXPECT_EQ(f.tensors().size(), 21u);
  const GgufTensorInfo* e = f.find_tensor("token_embd.weight");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->ne, (std::vector<int64_t>{16, 32000}));
  EXPECT_EQ(f.tensor_data(*e).size(), 16u * 32000 * 4);
}

TEST(Gguf, FixtureTinyLlama3Merges) {
  auto path = wgc::test::fixtures_dir() / "tiny-llama3-bf16" / "tiny-llama3-bf16-f16.gguf";
  WGC_REQUIRE_FILE(path);
  auto f = GgufFile::open(path);
  EXPECT_EQ(f.get_string("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(f.find("tokenizer.ggml.merges")->strings().size(), 280147u);
  EXPECT_EQ(f.find("tokenizer.ggml.tokens")->size(), 128256u);
  EXPECT_EQ(f.get_u32("tokenizer.ggml.bos_token_id"), 128000u);
  EXPECT_NE(f.get_string("tokenizer.chat_template").find("loop_messages"), std::string::npos);
}

// --- bad files ----------------------------------------------------------------------------------

TEST(GgufBad, EveryTruncationIsAnError) {
  auto bytes = sample_writer().to_bytes();
  // Every prefix that cuts the header, metadata, tensor infos or data must fail cleanly.
  size_t ok_from = bytes.size();
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::span<const std::byte> part(bytes.data(), n);
    try {
      GgufFile::parse(part, "truncated");
      ok_from = std::min(ok_from, n);
    } catch (const wgc::Error& e) {
      std::string msg = e.what();
      ASSERT_TRUE(msg.find("past the end") != std::string::npos || msg.find("cannot fit") != std::string::npos ||
                  msg.find("not a GGUF file") != std::string::npos)
          << msg;
      ASSERT_LT(n, ok_from) << "a shorter prefix parsed but this one failed: " << e.what();
    }
  }
  // Only prefixes that hold the last tensor's data parse (the writer pads the file after it to
  // the alignment, as llama.cpp's does).
  GgufFile whole = GgufFile::parse(bytes, "whole");
  const GgufTensorInfo& last = whole.tensors().back();
  const size_t end = size_t(whole.data_offset() + last.offset + last.bytes);
  EXPECT_EQ(ok_from, end);
  EXPECT_EQ(bytes.size() % whole.alignment(), 0u);
  // And via a real file: truncated inside the tensor data.
  Bytes b;
  b.b.assign(bytes.begin(), bytes.begin() + std::ptrdiff_t(end - 10));
  expect_error("truncated.gguf", b, {"tensor 'b.q8'", "runs past the end of the file"});
}

TEST(GgufBad, Magic) {
  Bytes b;
  b.raw("GGML").u32(3).u64(0).u64(0);
  expect_error("magic.gguf", b, {"not a GGUF file", "0x47474d4c"});
  expect_error("empty.gguf", Bytes{}, {"not a GGUF file"});
}

TEST(GgufBad, Versions) {
  Bytes v1;
  v1.raw("GGUF").u32(1).u64(0).u64(0);
  expect_error("v1.gguf", v1, {"version 1"});
  Bytes v9;
  v9.raw("GGUF").u32(9).u64(0).u64(0);
  expect_error("v9.gguf", v9, {"unsupported GGUF version 9"});
  Bytes be;
  be.raw("GGUF").u32(0x03000000).u64(0).u64(0);
  expect_error("bigendian.gguf", be, {"big-endian"});
}

TEST(GgufBad, AbsurdCounts) {
  expect_error("nkv.gguf", header(0, 1ull << 60), {"metadata count 1152921504606846976", "cannot fit"});
  expect_error("ntensors.gguf", header(~0ull, 0), {"tensor count", "cannot fit"});
  Bytes s = header(0, 1);
  s.u64(1ull << 62).raw("key").zeros(64);
  expect_error("keylen.gguf", s, {"string length 4611686018427387904 at offset 24", "runs past the end"});
  Bytes v = header(0, 1);
  v.str("k.str").u32(uint32_t(GgufType::String)).u64(1000).raw("short");
  expect_error("strlen.gguf", v, {"metadata key 'k.str'", "string length 1000", "runs past the end"});
  Bytes a = header(0, 1);
  a.str("k.arr").u32(uint32_t(GgufType::Array)).u32(uint32_t(GgufType::U32)).u64(1ull << 40).zeros(16);
  expect_error("arrlen.gguf", a, {"metadata key 'k.arr'", "array of 1099511627776 u32", "cannot fit"});
  Bytes sa = header(0, 1);
  sa.str("k.strs").u32(uint32_t(GgufType::Array)).u32(uint32_t(GgufType::String)).u64(1ull << 59).zeros(16);
  expect_error("strarrlen.gguf", sa, {"metadata key 'k.strs'", "cannot fit"});
}

TEST(GgufBad, Types) {
  Bytes t = header(0, 1);
  t.str("k.x").u32(13).zeros(8);
  expect_error("valtype.gguf", t, {"metadata key 'k.x'", "unknown value type 13"});
  Bytes et = header(0, 1);
  et.str("k.y").u32(uint32_t(GgufType::Array)).u32(99).u64(0);
  expect_error("elemtype.gguf", et, {"metadata key 'k.y'", "unknown array element type 99"});
  Bytes b = header(0, 1);
  b.str("k.b").u32(uint32_t(GgufType::Bool)).u8(2);
  expect_error("bool.gguf", b, {"metadata key 'k.b'", "bool value 2"});
  Bytes tt = header(1, 0);
  tt.str("w").u32(1).u64(256).u32(16).u64(0);
  expect_error("tensortype.gguf", tt, {"tensor 'w'", "type 16 (IQ2_XXS) is not supported"});
  Bytes tu = header(1, 0);
  tu.str("w").u32(1).u64(256).u32(1234).u64(0);
  expect_error("tensortype2.gguf", tu, {"tensor 'w'", "type 1234 (unknown)"});
}

TEST(GgufBad, NestingTooDeep) {
  Bytes d = header(0, 1);
  d.str("k.deep").u32(uint32_t(GgufType::Array));
  for (int i = 0; i < 40; ++i) d.u32(uint32_t(GgufType::Array)).u64(1);
  d.u32(uint32_t(GgufType::U8)).u64(0);
  expect_error("deep.gguf", d, {"metadata key 'k.deep'", "nested deeper than 16"});
}

TEST(GgufBad, DuplicatesAndKeys) {
  Bytes k = header(0, 2);
  k.str("k").u32(uint32_t(GgufType::U8)).u8(1).str("k").u32(uint32_t(GgufType::U8)).u8(2);
  expect_error("dupkey.gguf", k, {"metadata key 'k'", "duplicate key"});
  Bytes e = header(0, 1);
  e.str("").u32(uint32_t(GgufType::U8)).u8(1);
  expect_error("emptykey.gguf", e, {"empty key"});
  Bytes t = header(2, 0);
  t.str("w").u32(1).u64(4).u32(0).u64(0).str("w").u32(1).u64(4).u32(0).u64(32).zeros(128);
  expect_error("duptensor.gguf", t, {"tensor 'w'", "duplicate tensor name"});
}

TEST(GgufBad, Alignment) {
  Bytes a = header(0, 1);
  a.str("general.alignment").u32(uint32_t(GgufType::U32)).u32(24);
  expect_error("align.gguf", a, {"general.alignment is 24", "power of two"});
  Bytes s = header(0, 1);
  s.str("general.alignment").u32(uint32_t(GgufType::String)).str("32");
  expect_error("alignstr.gguf", s, {"general.alignment"});
}

TEST(GgufBad, TensorInfos) {
  Bytes dims = header(1, 0);
  dims.str("w").u32(5).u64(1).u64(1).u64(1).u64(1).u64(1).u32(0).u64(0);
  expect_error("dims.gguf", dims, {"tensor 'w'", "5 dimensions"});
  Bytes neg = header(1, 0);
  neg.str("w").u32(1).u64(~0ull).u32(0).u64(0);
  expect_error("negdim.gguf", neg, {"tensor 'w'", "dimension 0 is 18446744073709551615"});
  Bytes ovf = header(1, 0);
  ovf.str("w").u32(2).u64(1ull << 40).u64(1ull << 40).u32(0).u64(0);
  expect_error("overflow.gguf", ovf, {"tensor 'w'", "overflows"});
  Bytes blk = header(1, 0);
  blk.str("w").u32(2).u64(48).u64(2).u32(uint32_t(TensorType::Q8_0)).u64(0).zeros(256);
  expect_error("block.gguf", blk, {"tensor 'w'", "row length 48 is not a multiple of the Q8_0 block size 32"});
  Bytes mis = header(1, 0);
  mis.str("w").u32(1).u64(4).u32(0).u64(8).zeros(128);
  expect_error("misaligned.gguf", mis, {"tensor 'w'", "data offset 8 is not a multiple of the alignment 32"});
  Bytes past = header(1, 0);
  past.str("w").u32(1).u64(4).u32(0).u64(1ull << 50).zeros(64);
  expect_error("pastend.gguf", past, {"tensor 'w'", "1125899906842624", "runs past the end of the file"});
  Bytes big = header(1, 0);
  big.str("w").u32(2).u64(1024).u64(1024).u32(0).u64(0).zeros(64);
  expect_error("bigtensor.gguf", big, {"tensor 'w'", "+4194304", "runs past the end of the file"});
}

// GgufMetaValue::copy_of copies every kind of value (the sample's scalars, strings, arrays of
// numbers, bools, strings and arrays) so that a file's metadata can be carried into a new one byte
// for byte.
TEST(GgufWriter, CopyOfCopiesEveryType) {
  auto bytes = sample_writer().to_bytes();
  GgufFile f = GgufFile::parse(bytes, "original");
  GgufWriter copy;
  for (const auto& kv : f.metadata()) copy.add(kv.key, GgufMetaValue::copy_of(kv.value));
  for (const auto& ti : f.tensors()) copy.add_tensor(ti.name, ti.type, ti.ne, f.tensor_data(ti));
  EXPECT_EQ(copy.to_bytes(), bytes);
}

// --- the writer: every value type, tensors given and generated, written with threads ------------

TEST(GgufWriter, EveryMetadataTypeReadsBack) {
  GgufWriter w;
  w.add("u8", GgufMetaValue::u8(200));
  w.add("i8", GgufMetaValue::i8(-100));
  w.add("u16", GgufMetaValue::u16(60000));
  w.add("i16", GgufMetaValue::i16(-30000));
  w.add("u32", GgufMetaValue::u32(4000000000u));
  w.add("i32", GgufMetaValue::i32(-2000000000));
  w.add("u64", GgufMetaValue::u64(18000000000000000000ull));
  w.add("i64", GgufMetaValue::i64(-9000000000000000000ll));
  w.add("f32", GgufMetaValue::f32(1.5f));
  w.add("f64", GgufMetaValue::f64(-2.25e100));
  w.add("bool", GgufMetaValue::boolean(true));
  w.add("str", GgufMetaValue::string("héllo"));
  w.add("empty_str", GgufMetaValue::string(""));
  std::vector<int32_t> i32s = {1, -2, 3};
  std::vector<float> f32s = {0.5f, -1.f};
  std::vector<uint8_t> u8s = {1, 2, 255};
  std::vector<double> f64s = {1e-300, 2.0};
  std::vector<int64_t> i64s = {-1, int64_t(1) << 40};
  std::vector<bool> bools = {true, false, true};
  std::vector<std::string> strs = {"a", "", "b c"};
  w.add("arr_i32", GgufMetaValue::array(std::span<const int32_t>(i32s)));
  w.add("arr_f32", GgufMetaValue::array(std::span<const float>(f32s)));
  w.add("arr_u8", GgufMetaValue::array(std::span<const uint8_t>(u8s)));
  w.add("arr_f64", GgufMetaValue::array(std::span<const double>(f64s)));
  w.add("arr_i64", GgufMetaValue::array(std::span<const int64_t>(i64s)));
  w.add("arr_bool", GgufMetaValue::bool_array(bools));
  w.add("arr_str", GgufMetaValue::strings(strs));
  w.add("arr_empty", GgufMetaValue::array(std::span<const int32_t>()));
  std::vector<GgufMetaValue> inner = {GgufMetaValue::array(std::span<const int32_t>(i32s)),
                                      GgufMetaValue::strings(strs)};
  w.add("arr_arr", GgufMetaValue::array(GgufType::Array, inner));
  std::vector<GgufMetaValue> mixed = {GgufMetaValue::u32(1), GgufMetaValue::f32(2)};
  EXPECT_THROW(GgufMetaValue::array(GgufType::U32, mixed), wgc::Error);
  EXPECT_THROW(w.add("u8", GgufMetaValue::u8(1)), wgc::Error);  // duplicate key

  auto bytes = w.to_bytes();
  EXPECT_EQ(bytes.size(), w.file_bytes());
  GgufFile f = GgufFile::parse(bytes, "mem");
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.metadata().size(), 22u);
  EXPECT_EQ(f.find("u8")->to_u64(), 200u);
  EXPECT_EQ(f.find("u8")->type(), GgufType::U8);
  EXPECT_EQ(f.find("i8")->to_i64(), -100);
  EXPECT_EQ(f.find("u16")->to_u64(), 60000u);
  EXPECT_EQ(f.find("i16")->to_i64(), -30000);
  EXPECT_EQ(f.get_u32("u32"), 4000000000u);
  EXPECT_EQ(f.get_i32("i32"), -2000000000);
  EXPECT_EQ(f.get_u64("u64"), 18000000000000000000ull);
  EXPECT_EQ(f.find("i64")->to_i64(), -9000000000000000000ll);
  EXPECT_EQ(f.get_f32("f32"), 1.5f);
  EXPECT_EQ(f.find("f64")->to_f64(), -2.25e100);
  EXPECT_EQ(f.find("f64")->type(), GgufType::F64);
  EXPECT_TRUE(f.get_bool("bool"));
  EXPECT_EQ(f.get_string("str"), "héllo");
  EXPECT_EQ(f.get_string("empty_str", "x"), "");
  EXPECT_EQ(f.get_i32_array("arr_i32"), i32s);
  EXPECT_EQ(f.get_f32_array("arr_f32"), f32s);
  EXPECT_EQ(f.find("arr_u8")->array_type(), GgufType::U8);
  EXPECT_EQ(f.find("arr_u8")->at(2).to_u64(), 255u);
  EXPECT_EQ(f.find("arr_f64")->at(0).to_f64(), 1e-300);
  EXPECT_EQ(f.find("arr_i64")->at(1).to_i64(), int64_t(1) << 40);
  ASSERT_EQ(f.find("arr_bool")->size(), 3u);
  EXPECT_EQ(f.find("arr_bool")->at(0).to_bool(), true);
  EXPECT_EQ(f.find("arr_bool")->at(1).to_bool(), false);
  EXPECT_EQ(f.get_string_array("arr_str"), strs);
  EXPECT_EQ(f.find("arr_empty")->size(), 0u);
  const GgufValue* aa = f.find("arr_arr");
  ASSERT_TRUE(aa && aa->is_array());
  EXPECT_EQ(aa->array_type(), GgufType::Array);
  ASSERT_EQ(aa->size(), 2u);
  EXPECT_EQ(aa->at(0).array_type(), GgufType::I32);
  EXPECT_EQ(aa->at(0).at(1).to_i64(), -2);
  EXPECT_EQ(aa->at(1).at(2).to_string(), "b c");
}

TEST(GgufWriter, TensorsAlignedAndFilled) {
  for (uint32_t alignment : {32u, 64u}) {
    GgufWriter w(3, alignment);
    w.add_string("general.architecture", "test");
    std::vector<float> a = {1, 2, 3};  // 12 bytes: the next tensor must be padded
    w.add_tensor("a", TensorType::F32, {3}, f32_bytes(a));
    w.add_tensor("b", TensorType::Q8_0, {64, 3});  // filled by the callback
    w.add_tensor("c", TensorType::F16, {5, 2});
    EXPECT_THROW(w.add_tensor("bad", TensorType::Q4_0, {48, 2}), wgc::Error);  // not whole blocks
    EXPECT_THROW(w.add_tensor("a", TensorType::F32, {1}), wgc::Error);         // duplicate
    EXPECT_THROW(w.add_tensor("z", TensorType::F32, {0}), wgc::Error);
    auto fill = [&](size_t index, int64_t row0, int64_t rows, std::span<std::byte> out) {
      const auto& t = w.tensors()[index];
      ASSERT_EQ(out.size(), size_t(rows) * t.row_bytes());
      for (size_t i = 0; i < out.size(); ++i)
        out[i] = std::byte(uint8_t(index * 31 + size_t(row0) * t.row_bytes() + i));
    };
    auto bytes = w.to_bytes(fill);
    GgufFile f = GgufFile::parse(bytes, "mem");
    EXPECT_EQ(f.alignment(), alignment);
    EXPECT_EQ(f.data_offset(), w.data_offset());
    EXPECT_EQ(f.data_offset() % alignment, 0u);
    ASSERT_EQ(f.tensors().size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
      const auto& ti = f.tensors()[i];
      EXPECT_EQ(ti.name, w.tensors()[i].name);
      EXPECT_EQ(ti.ne, w.tensors()[i].ne);
      EXPECT_EQ(ti.type, w.tensors()[i].type);
      EXPECT_EQ(ti.offset % alignment, 0u);
      EXPECT_EQ(ti.bytes, w.tensors()[i].bytes);
    }
    auto da = f.tensor_data(f.tensors()[0]);
    EXPECT_EQ(std::memcmp(da.data(), a.data(), 12), 0);
    auto db = f.tensor_data(f.tensors()[1]);
    ASSERT_EQ(db.size(), 3u * 68);
    for (size_t i = 0; i < db.size(); ++i) ASSERT_EQ(db[i], std::byte(uint8_t(31 + i))) << i;
    if (alignment != 32) {
      EXPECT_EQ(f.get_u32("general.alignment"), alignment);
    } else {
      EXPECT_EQ(f.find("general.alignment"), nullptr);
    }

    // write(): the same bytes with any thread count and chunk size.
    fs::path dir = temp_dir("writer" + std::to_string(alignment));
    auto path = dir / "t.gguf";
    GgufWriteOptions o;
    o.threads = 3;
    o.chunk_bytes = 40;  // a row per chunk
    o.progress = false;
    w.write(path, fill, o);
    EXPECT_EQ(read_file(path), bytes);
    EXPECT_THROW(w.write(dir / "u.gguf", {}, o), wgc::Error);  // no data without a fill
    std::vector<std::string> left;                             // no temporary left behind
    for (const auto& e : fs::directory_iterator(dir)) left.push_back(e.path().filename().string());
    EXPECT_EQ(left, std::vector<std::string>{"t.gguf"});
  }
}

// --- the header read from a ByteSource (GgufFile::read) -------------------------------------------

namespace {

using wgc::test::MemorySource;

// A header of about 2.9 MB (a large vocabulary): more than the first read's MiB.
std::vector<std::byte> big_header_file() {
  GgufWriter w = sample_writer();
  std::vector<std::string> vocab;
  for (int i = 0; i < 60000; ++i) vocab.push_back("token-" + std::to_string(i) + std::string(size_t(i % 61), 'x'));
  w.add_string_array("tokenizer.ggml.tokens", vocab);
  const size_t blocks = (3 << 20) / 34;  // 3 MiB of Q8_0 blocks
  std::vector<std::byte> big(blocks * 34, std::byte(7));
  w.add_tensor("big.q8", TensorType::Q8_0, {int64_t(blocks * 32)}, big);
  return w.to_bytes();
}

// The same file as parse() gives: metadata, tensor infos, data section.
void expect_same(const GgufFile& got, const GgufFile& want) {
  EXPECT_EQ(got.version(), want.version());
  EXPECT_EQ(got.data_offset(), want.data_offset());
  EXPECT_EQ(got.file_size(), want.file_size());
  ASSERT_EQ(got.metadata().size(), want.metadata().size());
  for (size_t i = 0; i < want.metadata().size(); ++i) {
    EXPECT_EQ(got.metadata()[i].key, want.metadata()[i].key);
    EXPECT_EQ(got.metadata()[i].value.describe(1000, 1000), want.metadata()[i].value.describe(1000, 1000));
  }
  ASSERT_EQ(got.tensors().size(), want.tensors().size());
  for (size_t i = 0; i < want.tensors().size(); ++i) {
    EXPECT_EQ(got.tensors()[i].name, want.tensors()[i].name);
    EXPECT_EQ(got.tensors()[i].offset, want.tensors()[i].offset);
    EXPECT_EQ(got.tensors()[i].bytes, want.tensors()[i].bytes);
  }
}

// The message of GgufFile::read's error.
std::string error_of_read(std::shared_ptr<const ByteSource> src, uint64_t max_header = GgufFile::kMaxHeaderBytes) {
  try {
    GgufFile::read(std::move(src), "limited", max_header);
  } catch (const wgc::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(GgufStream, HeaderReadInBoundedPieces) {
  auto bytes = big_header_file();
  auto whole = GgufFile::parse(bytes, "whole");
  ASSERT_GT(whole.data_offset(), 2u << 20);
  auto src = std::make_shared<MemorySource>(bytes);
  auto f = GgufFile::read(src, "streamed");
  expect_same(f, whole);
  // The header grew from the first MiB in a few reads, and no further than twice the header.
  EXPECT_GE(src->reads, 2u);
  EXPECT_LE(src->read_bytes, 2 * whole.data_offset());
  EXPECT_LT(src->read_bytes, bytes.size());  // not the whole file
  EXPECT_EQ(f.source(), src);
  // A small tensor is read on demand (and kept); the big one is refused there.
  const GgufTensorInfo* a = f.find_tensor("a");
  auto da = f.tensor_data(*a), wa = whole.tensor_data(*whole.find_tensor("a"));
  EXPECT_TRUE(std::equal(da.begin(), da.end(), wa.begin(), wa.end()));
  EXPECT_EQ(f.tensor_data(*a).data(), da.data());
  try {
    f.tensor_data(*f.find_tensor("big.q8"));
    ADD_FAILURE() << "no error";
  } catch (const wgc::Error& e) {
    EXPECT_TRUE(wgc::test::has(e.what(), "ModelFile::load")) << e.what();
  }
  // A small file is read whole at once.
  auto small = sample_writer().to_bytes();
  auto ss = std::make_shared<MemorySource>(small);
  expect_same(GgufFile::read(ss, "small"), GgufFile::parse(small, "small"));
  EXPECT_EQ(ss->reads, 1u);
}

TEST(GgufStream, HeaderLimit) {
  auto bytes = big_header_file();
  auto src = std::make_shared<MemorySource>(bytes);
  try {
    GgufFile::read(src, "limited", 1 << 20);
    ADD_FAILURE() << "no error";
  } catch (const wgc::Error& e) {
    EXPECT_TRUE(wgc::test::has(e.what(), "limited: ")) << e.what();
    EXPECT_TRUE(wgc::test::has(e.what(), "1048576 bytes a GGUF header may take")) << e.what();
  }
  EXPECT_LE(src->read_bytes, 1u << 20);
  // A limit too small for the magic, and a download that stops inside the header.
  EXPECT_TRUE(wgc::test::has(error_of_read(std::make_shared<MemorySource>(bytes), 2), "needs more than the 2 bytes"));
  std::vector<std::byte> head(bytes.begin(), bytes.begin() + 1500000);
  const std::string stopped = error_of_read(std::make_shared<MemorySource>(head, bytes.size()));
  EXPECT_TRUE(wgc::test::has(stopped, "limited: reading its header: the download stopped at 1500000")) << stopped;
  // Counts and lengths are bounded by the limit before anything is allocated.
  Bytes b = header(0, 1000000);
  b.b.resize(8 << 20);
  try {
    GgufFile::read(std::make_shared<MemorySource>(b.b), "counts", 1 << 20);
    ADD_FAILURE() << "no error";
  } catch (const wgc::Error& e) {
    EXPECT_TRUE(wgc::test::has(e.what(), "metadata count 1000000 cannot fit")) << e.what();
  }
}

TEST(GgufStream, EveryTruncationIsTheSameError) {
  auto bytes = sample_writer().to_bytes();
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::span<const std::byte> part(bytes.data(), n);
    std::string want = "(no error)", got = "(no error)";
    try {
      GgufFile::parse(part, "truncated");
    } catch (const wgc::Error& e) {
      want = e.what();
    }
    try {
      GgufFile::read(std::make_shared<MemorySource>(std::vector<std::byte>(part.begin(), part.end())), "truncated");
    } catch (const wgc::Error& e) {
      got = e.what();
    }
    ASSERT_EQ(got, want) << n << " bytes";
  }
}
