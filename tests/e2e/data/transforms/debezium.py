# A Debezium change event, as the kafka source delivers it, becomes the row it describes: the row
# after the change (before it, for a delete), with where and when the change happened.
from datetime import datetime, timezone

event = data['value']
deleted = event['op'] == 'd'
row = dict(event['before'] if deleted else event['after'])
row['__deleted'] = deleted
row['__cluster'] = event['source']['name'].replace('_', '-')
row['__kafka_partition'] = data['partition']
row['__kafka_offset'] = data['offset']
changed_at = datetime.fromtimestamp(event['source']['ts_ms'] / 1000, timezone.utc)
row['__event_timestamp'] = changed_at.strftime('%Y-%m-%d %H:%M:%S.%f')
data = row
