// NumPy .npy files (format version 1.0 written; 1.0, 2.0 and 3.0 read): little-endian C-order
// arrays of f4, f8, i4, i8, u1, ... .
//
//   npy::write(path, logits, {n, vocab});             // float32 [n, vocab]
//   npy::Array a = npy::read(path);                   // a.dtype == "<f4", a.shape == {n, vocab}
//   std::vector<float> v = a.to_f32();
#pragma once

#include "util/output_file.h"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace wgc::npy {

struct Array {
  std::string dtype;           // NumPy descr: "<f4", "<i4", "|u1", ...
  std::vector<int64_t> shape;  // empty: a scalar
  bool fortran_order = false;
  std::vector<std::byte> data;  // raw little-endian elements

  int64_t numel() const;
  size_t item_size() const;             // bytes per element of dtype
  std::vector<float> to_f32() const;    // from f4, f8, i1..i8, u1..u8 (C order)
  std::vector<int32_t> to_i32() const;  // from integer types (range-checked)
};

// The 1.0 header for a C-order array: magic, version, length, dict padded to a multiple of 64.
std::string header(const std::string& dtype, std::span<const int64_t> shape);

// Writes raw elements of `dtype` (numel(shape) * item size bytes). Throws wgc::Error on I/O errors or
// a size mismatch.
// Written through a temporary file (util/output_file.h); an existing file is replaced only with
// Overwrite::Yes.
void write(const std::filesystem::path& path, const std::string& dtype, std::span<const int64_t> shape,
           std::span<const std::byte> data, Overwrite overwrite = Overwrite::Yes);
void write(const std::filesystem::path& path, std::span<const float> data, std::vector<int64_t> shape,
           Overwrite overwrite = Overwrite::Yes);
void write(const std::filesystem::path& path, std::span<const int32_t> data, std::vector<int64_t> shape,
           Overwrite overwrite = Overwrite::Yes);

// Throws wgc::Error naming the file and what is wrong (magic, version, header, dtype, size).
Array read(const std::filesystem::path& path);
Array parse(std::span<const std::byte> bytes, const std::string& source = "npy");

}  // namespace wgc::npy
