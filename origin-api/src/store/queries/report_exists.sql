-- Whether report $1 exists.
SELECT report_id FROM reports WHERE report_id = $1
