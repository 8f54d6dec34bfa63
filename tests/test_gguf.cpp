// GGUF reader: every metadata type (incl. nested arrays) round-trips through GgufWriter, typed
// getters convert or refuse, alignment and tensor data are right, the fixtures read, and every kind
// of bad file gives a wgc::Error naming the file and the problem (never a crash).
#include "llm/formats/gguf.h"
#include "llm/formats/gguf_writer.h"
#include "test_util.h"

#include <cstring>
#include <fstream>

using namespace wgc::llm;
namespace fs = std::filesystem;

namespace {

using wgc::test::temp_dir;

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
  std::vector<std::byte> nested;
  GgufWriter::encode_u32(nested, uint32_t(GgufType::Array));
  GgufWriter::encode_u64(nested, 3);
  GgufWriter::encode_u32(nested, uint32_t(GgufType::U16));
  GgufWriter::encode_u64(nested, 2);
  for (uint16_t v : {uint16_t(1), uint16_t(2)}) {
    nested.push_back(std::byte(v & 0xFF));
    nested.push_back(std::byte(v >> 8));
  }
  GgufWriter::encode_u32(nested, uint32_t(GgufType::I64));
  GgufWriter::encode_u64(nested, 0);
  GgufWriter::encode_u32(nested, uint32_t(GgufType::Array));
  GgufWriter::encode_u64(nested, 1);
  GgufWriter::encode_u32(nested, uint32_t(GgufType::String));
  GgufWriter::encode_u64(nested, 1);
  GgufWriter::encode_string(nested, "x");
  w.add_raw("t.nested", GgufType::Array, nested);
  std::vector<std::byte> bools;
  GgufWriter::encode_u32(bools, uint32_t(GgufType::Bool));
  GgufWriter::encode_u64(bools, 2);
  bools.push_back(std::byte(0));
  bools.push_back(std::byte(1));
  w.add_raw("t.bools", GgufType::Array, bools);

  std::vector<float> a = {1, 2, 3, 4, 5, 6};
  w.add_tensor("a", TensorType::F32, {3, 2}, f32_bytes(a));
  std::vector<std::byte> q8(2 * 34, std::byte(1));
  w.add_tensor("b.q8", TensorType::Q8_0, {64}, q8);
  return w;
}

}  // namespace

TEST(Gguf, EveryValueTypeRoundTrips) {
  auto bytes = sample_writer().bytes();
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
  auto bytes = sample_writer().bytes();
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
    auto bytes = sample_writer(alignment).bytes();
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
  auto bytes = sample_writer().bytes();
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
  // Only the full file parses (the last tensor ends at the end).
  EXPECT_EQ(ok_from, bytes.size());
  // And via a real file: truncated inside the tensor data.
  Bytes b;
  b.b.assign(bytes.begin(), bytes.end() - 10);
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

// add_value copies every kind of value (scalars, strings, arrays of numbers, strings and arrays)
// so that a file's metadata can be carried into a new one byte for byte.
TEST(GgufWriter, AddValueCopiesEveryType) {
  GgufWriter w;
  w.add_u8("a.u8", 200);
  w.add_i8("a.i8", -3);
  w.add_u16("a.u16", 65000);
  w.add_i16("a.i16", -300);
  w.add_u32("a.u32", 4000000000u);
  w.add_i32("a.i32", -7);
  w.add_u64("a.u64", 1ull << 40);
  w.add_i64("a.i64", -(1ll << 40));
  w.add_f32("a.f32", 1.5f);
  w.add_f64("a.f64", 2.25);
  w.add_bool("a.bool", true);
  w.add_string("a.str", "hello");
  std::vector<std::string> strs = {"x", "", "yz"};
  w.add_string_array("a.strs", strs);
  std::vector<int32_t> ints = {1, -2, 3};
  w.add_i32_array("a.ints", ints);
  std::vector<std::byte> nested;  // [[1, 2], [3]] as arrays of u32
  GgufWriter::encode_u32(nested, uint32_t(GgufType::Array));
  GgufWriter::encode_u64(nested, 2);
  for (std::vector<uint32_t> inner : {std::vector<uint32_t>{1, 2}, std::vector<uint32_t>{3}}) {
    GgufWriter::encode_u32(nested, uint32_t(GgufType::U32));
    GgufWriter::encode_u64(nested, inner.size());
    for (uint32_t v : inner) GgufWriter::encode_u32(nested, v);
  }
  w.add_raw("a.nested", GgufType::Array, nested);
  std::vector<float> t = {1, 2, 3, 4};
  w.add_tensor("t", TensorType::F32, {4}, std::as_bytes(std::span(t)));
  auto bytes = w.bytes();
  GgufFile f = GgufFile::parse(bytes, "original");

  GgufWriter copy;
  for (const auto& kv : f.metadata()) copy.add_value(kv.key, kv.value);
  for (const auto& ti : f.tensors()) copy.add_tensor(ti.name, ti.type, ti.ne, f.tensor_data(ti));
  EXPECT_EQ(copy.bytes(), bytes);
}
