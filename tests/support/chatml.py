"""A locally trained byte-level BPE tokenizer with a ChatML chat template (tools and tool role).

Byte-level, so any text (JSON tool calls included) encodes and decodes losslessly, like the
tokenizers of real chat models. Built from a few sentences in well under a second.
"""

from __future__ import annotations

CHATML = (
    "{%- if tools %}<|im_start|>system{{ '\\n' }}Tools: {{ tools | tojson }}<|im_end|>{{ '\\n' }}{% endif -%}"
    "{%- for m in messages -%}"
    "<|im_start|>{{ m['role'] }}{% if m.get('name') %} {{ m['name'] }}{% endif %}{{ '\\n' }}"
    "{{ m['content'] }}<|im_end|>{{ '\\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt %}<|im_start|>assistant{{ '\\n' }}{% endif -%}"
)

CORPUS = [
    'call the echo tool with a message <tool_call>{"name": "echo_message", "arguments": {"message": "hello"}}</tool_call>',
    "the tool answered hello world, done. player 15 soft dealer A action: hit stand",
    "system user assistant tool Tools: type function name description parameters properties",
]


def chatml_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<|pad|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    backend.train_from_iterator(CORPUS * 4, trainer)
    tok = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        pad_token="<|pad|>",
        eos_token="<|im_end|>",
        clean_up_tokenization_spaces=False,
    )
    tok.chat_template = CHATML
    return tok
