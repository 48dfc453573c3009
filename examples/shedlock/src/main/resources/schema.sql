CREATE TABLE IF NOT EXISTS report (report_day DATE NOT NULL, total BIGINT NOT NULL);
-- The fence table, made by fencer.jdbc.create-table=true; create it with your migrations instead, as:
CREATE TABLE IF NOT EXISTS fencer_fence (scope VARCHAR(256) PRIMARY KEY, token BIGINT NOT NULL, updated_at TIMESTAMP);
