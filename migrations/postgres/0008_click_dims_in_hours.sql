-- A link-hour is one row (issue 13). Its visits per country, referrer, device and status
-- move into the hour's row as one JSON object, `{"c:DE": 3, "r:": 1, "d:mobile": 3,
-- "s:302": 3}` (the dimension's initial, a colon, the value; nothing after the colon
-- when the value is unknown). Before, each link-hour was eleven index and heap entries
-- here (seven on SQLite); under a million links visited uniformly nearly every click is
-- a link-hour of its own, and writing them was the whole cost of a recorded click.
-- Adding a column with a constant default rewrites nothing; the UPDATE rewrites the
-- hour rows that have dimensions, once.
ALTER TABLE click_hours ADD COLUMN dims JSONB NOT NULL DEFAULT '{}';

-- Every dimension row has its hour row: both were always written in one transaction.
UPDATE click_hours h SET dims = d.dims
FROM (
    SELECT link_id, hour, bot, jsonb_object_agg(left(dim, 1) || ':' || value, visits) AS dims
    FROM click_dims
    GROUP BY link_id, hour, bot
) d
WHERE h.link_id = d.link_id AND h.hour = d.hour AND h.bot = d.bot;

DROP TABLE click_dims;
