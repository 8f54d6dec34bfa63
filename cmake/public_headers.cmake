# The public API: three umbrella headers, each installed as one file (<wgc.h>, <wgc/llm.h>,
# <wgc/cnn.h>) flattened at build time from the headers below (cmake/flatten_header.cpp). Only the
# headers listed here may be reached from an umbrella: an internal header included by a public one
# fails the build with the chain that reaches it. Everything else (kernel tuning, the engines'
# internals, the CLI) stays in the build tree.
set(WGC_PUBLIC_ROOTS wgc.h llm.h cnn.h)
set(WGC_PUBLIC_HEADERS
    # runtime and compute ops: <wgc.h>
    wgc.h gpu/batch.h gpu/context.h gpu/kernel.h gpu/tensor.h gpu/webgpu_api.h
    ops/conv.h ops/map.h ops/matmul.h ops/op_version.h ops/pool.h ops/reduce.h ops/stencil.h ops/thresholds.h
    cpu/conv.h util/device.h util/error.h util/image.h util/json.h util/output_file.h
    # language models: <wgc/llm.h>
    llm.h llm/chat/chat_template.h llm/chat/jinja.h llm/chat/tool_calls.h
    llm/formats/byte_source.h llm/formats/gguf.h llm/formats/gguf_writer.h llm/formats/mapped_file.h
    llm/formats/model_config.h llm/formats/model_file.h llm/formats/safetensors.h cpu/llm/tensor_type.h
    llm/generate/chat_session.h llm/generate/default_model.h llm/generate/generator.h llm/generate/sampler.h
    llm/generate/perplexity.h llm/generate/speculative.h llm/generate/stop_strings.h llm/grammar/grammar.h llm/grammar/json_schema.h llm/grammar/matcher.h
    llm/hub/hub.h llm/model/llama.h cpu/llm/cpu_features.h llm/serve/scheduler.h llm/synth/synth_model.h
    llm/tokenizer/spec.h llm/tokenizer/tokenizer.h
    ops/llm/linear_version.h ops/llm/kv_type.h
    # image models: <wgc/cnn.h>
    cnn.h cnn/fuse.h cnn/graph.h cnn/model.h cnn/onnx.h cnn/plan.h cpu/tensor_ops.h ops/tensor_ops.h
    cpu/elementwise.h cpu/index_ops.h cpu/norm.h cpu/resize.h cpu/words.h cpu/detect.h cpu/fused_attention.h)

add_executable(wgc_flatten_header cmake/flatten_header.cpp)
file(GLOB_RECURSE WGC_ALL_HEADERS CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/*.h)
set(WGC_PUBLIC_DIR ${CMAKE_CURRENT_BINARY_DIR}/public)
list(TRANSFORM WGC_PUBLIC_ROOTS PREPEND ${WGC_PUBLIC_DIR}/ OUTPUT_VARIABLE WGC_PUBLIC_FILES)
add_custom_command(
  OUTPUT ${WGC_PUBLIC_FILES}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${WGC_PUBLIC_DIR}
  COMMAND wgc_flatten_header ${CMAKE_CURRENT_SOURCE_DIR}/src ${WGC_PUBLIC_DIR} ${WGC_PUBLIC_ROOTS} -- ${WGC_PUBLIC_HEADERS}
  DEPENDS wgc_flatten_header ${WGC_ALL_HEADERS} ${CMAKE_CURRENT_SOURCE_DIR}/cmake/public_headers.cmake
  COMMENT "Flattening the public headers (cmake/public_headers.cmake)"
  VERBATIM)
add_custom_target(wgc_public_headers ALL DEPENDS ${WGC_PUBLIC_FILES})
install(FILES ${WGC_PUBLIC_FILES} DESTINATION include/wgc)
