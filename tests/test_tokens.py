from memgauge.tokens import TokenCounter, openai_tiles, qwen_patches


def test_openai_tile_formula_matches_published_examples():
    assert openai_tiles(512, 512) == 85 + 170 * 1
    assert openai_tiles(1024, 1024) == 85 + 170 * 4  # scaled to 768x768: 2x2 tiles
    assert openai_tiles(2048, 4096) == 85 + 170 * 6  # 1024x2048 -> 768x1536: 2x3 tiles


def test_qwen_patches():
    assert qwen_patches(280, 280) == 100 + 2  # 10x10 patches of 28 px
    assert qwen_patches(10, 10) == 4 + 2  # raised to the minimum of 4 patches


def test_text_counts_are_real_bpe_counts_and_memoised():
    c = TokenCounter()
    assert c.text("Hello world") == 2
    assert c.text("") == 0
    long = "memory " * 200_000  # longer than the backend's one-call limit
    assert c.text(long) >= 200_000
    assert c.text(long) == c.text(long)
    assert c.describe()["text_tokenizer"] == "o200k_base"
