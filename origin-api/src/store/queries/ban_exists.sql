SELECT ban_id FROM bans WHERE ban_id = $1
