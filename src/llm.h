// wgc/llm.h: one include for the LLM layer (installed as <wgc/llm.h>): model files (GGUF,
// safetensors, config), tokenizers, chat templates, the Llama-family engine, sampling and
// generation, grammars and JSON schemas for constrained output, tool calls, chat sessions, perplexity,
// pulling models from the Hugging Face Hub, the request scheduler, and random-weight model files.
// Includes <wgc.h>.
#pragma once

#include "wgc.h"

#include "llm/chat/chat_template.h"
#include "llm/chat/jinja.h"
#include "llm/chat/tool_calls.h"
#include "llm/formats/gguf.h"
#include "llm/formats/model_config.h"
#include "llm/formats/model_file.h"
#include "llm/formats/safetensors.h"
#include "llm/generate/chat_session.h"
#include "llm/generate/default_model.h"
#include "llm/generate/generator.h"
#include "llm/generate/perplexity.h"
#include "llm/generate/sampler.h"
#include "llm/grammar/grammar.h"
#include "llm/grammar/json_schema.h"
#include "llm/hub/hub.h"
#include "llm/model/llama.h"
#include "llm/serve/scheduler.h"
#include "llm/synth/synth_model.h"
#include "llm/tokenizer/tokenizer.h"
