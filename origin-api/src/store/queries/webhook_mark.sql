SELECT at FROM webhook_marks WHERE name = $1
