// wgc: WebGPU Compute. One include for the runtime and the compute ops (installed as <wgc.h>, also
// reachable as <wgc/wgc.h>). The LLM layer has its own: <wgc/llm.h>.
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
#include "ops/thresholds.h"
#include "util/device.h"
#include "util/error.h"
#include "util/image.h"
#include "util/json.h"
