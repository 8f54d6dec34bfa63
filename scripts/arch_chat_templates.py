"""Chat templates of Gemma and Phi and the conversations they are rendered on, for the fixtures of
tests/data/arch (scripts/make_arch_fixtures.py renders them with transformers,
scripts/render_chat_templates.py with Jinja2 configured as transformers configures it).
"""

# gemma-2 and phi-3.5: llama.cpp's models/templates/*.jinja (the models' tokenizer_config.json templates,
# newlines inside string literals as there); phi-3-mini and phi-4: llama.cpp's tests/test-chat-template.cpp;
# gemma-3: google/gemma-3-*-it's template, with "\n" escapes inside its string literals.
TEMPLATES = {
    "gemma-2": (
        "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
        "{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
        "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
        "{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}"
        "{% endif %}{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}"
        "{% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %}"),
    "gemma-3": (
        "{{ bos_token }}\n"
        "{%- if messages[0]['role'] == 'system' -%}\n"
        "    {%- if messages[0]['content'] is string -%}\n"
        "        {%- set first_user_prefix = messages[0]['content'] + '\\n\\n' -%}\n"
        "    {%- else -%}\n"
        "        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\\n\\n' -%}\n"
        "    {%- endif -%}\n"
        "    {%- set loop_messages = messages[1:] -%}\n"
        "{%- else -%}\n"
        "    {%- set first_user_prefix = \"\" -%}\n"
        "    {%- set loop_messages = messages -%}\n"
        "{%- endif -%}\n"
        "{%- for message in loop_messages -%}\n"
        "    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}\n"
        "        {{ raise_exception(\"Conversation roles must alternate user/assistant/user/assistant/...\") }}\n"
        "    {%- endif -%}\n"
        "    {%- if (message['role'] == 'assistant') -%}\n"
        "        {%- set role = \"model\" -%}\n"
        "    {%- else -%}\n"
        "        {%- set role = message['role'] -%}\n"
        "    {%- endif -%}\n"
        "    {{ '<start_of_turn>' + role + '\\n' + (first_user_prefix if loop.first else \"\") }}\n"
        "    {%- if message['content'] is string -%}\n"
        "        {{ message['content'] | trim }}\n"
        "    {%- elif message['content'] is iterable -%}\n"
        "        {%- for item in message['content'] -%}\n"
        "            {%- if item['type'] == 'image' -%}\n"
        "                {{ '<start_of_image>' }}\n"
        "            {%- elif item['type'] == 'text' -%}\n"
        "                {{ item['text'] | trim }}\n"
        "            {%- endif -%}\n"
        "        {%- endfor -%}\n"
        "    {%- else -%}\n"
        "        {{ raise_exception(\"Invalid content type\") }}\n"
        "    {%- endif -%}\n"
        "    {{ '<end_of_turn>\\n' }}\n"
        "{%- endfor -%}\n"
        "{%- if add_generation_prompt -%}\n"
        "    {{'<start_of_turn>model\\n'}}\n"
        "{%- endif -%}\n"),
    "phi-3.5": (
        "{% for message in messages %}{% if message['role'] == 'system' and message['content'] %}{{'<|system|>\n' + "
        "message['content'] + '<|end|>\n'}}{% elif message['role'] == 'user' %}{{'<|user|>\n' + message['content'] + "
        "'<|end|>\n'}}{% elif message['role'] == 'assistant' %}{{'<|assistant|>\n' + message['content'] + "
        "'<|end|>\n'}}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% else %}"
        "{{ eos_token }}{% endif %}"),
    "phi-3-mini": (
        "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') %}{{'<|user|>' + '\\n' + "
        "message['content'] + '<|end|>' + '\\n' + '<|assistant|>' + '\\n'}}{% elif (message['role'] == 'assistant') %}"
        "{{message['content'] + '<|end|>' + '\\n'}}{% endif %}{% endfor %}"),
    "phi-4": (
        "{% for message in messages %}{% if (message['role'] == 'system') %}{{'<|im_start|>system<|im_sep|>' + "
        "message['content'] + '<|im_end|>'}}{% elif (message['role'] == 'user') %}{{'<|im_start|>user<|im_sep|>' + "
        "message['content'] + '<|im_end|><|im_start|>assistant<|im_sep|>'}}{% elif (message['role'] == 'assistant') %}"
        "{{message['content'] + '<|im_end|>'}}{% endif %}{% endfor %}"),
}
TEMPLATE_TOKENS = {"gemma-2": ("<bos>", "<eos>"), "gemma-3": ("<bos>", "<eos>"), "phi-3.5": ("<s>", "<|endoftext|>"),
                   "phi-3-mini": ("<s>", "<|endoftext|>"), "phi-4": ("<|endoftext|>", "<|endoftext|>")}
CONVERSATIONS = {
    "single": [{"role": "user", "content": "Hello!"}],
    "system": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "What is 2+2?"},
               {"role": "assistant", "content": "4"}, {"role": "user", "content": "And 3+3?"}],
    "spaces": [{"role": "user", "content": "  padded question \n"}, {"role": "assistant", "content": "  reply  "},
               {"role": "user", "content": "next\n\nline"}],
    "bad_order": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}],
    "empty_system": [{"role": "system", "content": ""}, {"role": "user", "content": "Hi"}],
}

