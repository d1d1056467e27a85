-- Random codes (issue 40, docs/random-codes.md): a domain's codes are numbered by its
-- sequence (`sequential`, as before) or drawn at random (`random`, 7 to 12 characters).
ALTER TABLE domains ADD COLUMN code_strategy TEXT NOT NULL DEFAULT 'sequential'
    CHECK (code_strategy IN ('sequential', 'random'));
