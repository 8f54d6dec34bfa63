// wgc: WebGPU Compute. One include for the runtime and the compute ops.
// LLM pieces live under llm/ (formats, tokenizer, model, generate) and are included on their own.
#pragma once

#include "gpu/batch.h"
#include "gpu/context.h"
#include "gpu/kernel.h"
#include "gpu/tensor.h"
#include "ops/conv.h"
#include "ops/map.h"
#include "ops/matmul.h"
#include "ops/pool.h"
#include "ops/reduce.h"
#include "ops/stencil.h"
#include "util/error.h"
