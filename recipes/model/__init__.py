"""Facts about a model checkpoint read from its files (config.json, quantization_config, its vision side): the lowest
domain layer, imported by memory, training, quantization and the steps, importing none of them."""
