-- A visit limit counts people, not refreshes (issue 54, docs/api.md `max_visits`, D-280).
-- Each person a link with a limit had, per UTC day (`day`, Unix ms of its start): a keyed
-- hash of the visitor's address (`shared::clicks::person`), kept while a late tally of
-- that day may still arrive, then forgotten. A link's count is its row of day 0, person
-- 0 (`n`): a person adds one when first written, a visit that named no person (an edge
-- before persons) one each.
CREATE TABLE visit_limit_people (
    link_id BIGINT NOT NULL,
    day     BIGINT NOT NULL,
    person  BIGINT NOT NULL,
    n       BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (link_id, day, person)
);
CREATE INDEX visit_limit_people_by_day ON visit_limit_people (day) WHERE day > 0;

-- A link with a limit starts from what its limit counted until now: its people's visits.
INSERT INTO visit_limit_people (link_id, day, person, n)
SELECT h.link_id, 0, 0, SUM(h.visits)
FROM click_hours h JOIN links l ON l.link_id = h.link_id
WHERE h.bot = false AND l.options LIKE '%"max_visits":%'
GROUP BY h.link_id;

-- Those links' copies at the edge lack "lm", so the edge names no visitor of theirs: the
-- housekeeping sweep publishes each again, a few hundred a minute (D-280).
CREATE TABLE limit_republish (link_id BIGINT PRIMARY KEY);
INSERT INTO limit_republish (link_id)
SELECT link_id FROM links
WHERE status = 'active' AND options LIKE '%"max_visits":%' AND options NOT LIKE '%"exhausted":true%';
