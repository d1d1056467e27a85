-- Every host of a link's rules, split, page for when it ended and preview image.
SELECT DISTINCT host FROM link_hosts
