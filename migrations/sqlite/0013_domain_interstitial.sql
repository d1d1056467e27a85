-- A domain whose every link shows its interstitial (the destination and a link to
-- continue) instead of redirecting at once (issue 17): for a domain of untrusted targets.
ALTER TABLE domains ADD COLUMN interstitial INTEGER NOT NULL DEFAULT 0 CHECK (interstitial IN (0, 1));
