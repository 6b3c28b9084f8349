"""Fine-tuning a shipped encoder so that a word's hidden state separates its senses (`contextlens tune`)."""
