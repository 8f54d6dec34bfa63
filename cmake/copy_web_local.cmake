# Completes the static site's page at local/ (SITE = build/web/local): the engine built for the
# browser (WASM = build/wasm: wgc-core.js, wgc-core.wasm, from scripts/build_wasm.sh) and the
# built-in model (MODEL) in models/. Files that are absent are skipped (the page then says that the
# engine was not built); run on every build, copying only what changed.
cmake_minimum_required(VERSION 3.20)
foreach(f wgc-core.js wgc-core.wasm)
  if(EXISTS "${WASM}/${f}")
    file(MAKE_DIRECTORY "${SITE}")
    file(COPY_FILE "${WASM}/${f}" "${SITE}/${f}" ONLY_IF_DIFFERENT)
  endif()
endforeach()
if(EXISTS "${MODEL}")
  get_filename_component(name "${MODEL}" NAME)
  file(MAKE_DIRECTORY "${SITE}/models")
  file(COPY_FILE "${MODEL}" "${SITE}/models/${name}" ONLY_IF_DIFFERENT)
endif()
