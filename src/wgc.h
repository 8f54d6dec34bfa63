// wgc: WebGPU Compute. One include for the runtime and the ops.
#pragma once

#include "gpu/batch.h"
#include "gpu/context.h"
#include "gpu/error.h"
#include "gpu/kernel.h"
#include "gpu/tensor.h"
