-- Every host a link targets, tombstones included (read from the index alone).
SELECT DISTINCT target_host FROM links
