"""``kraft-decode``: decode captured Kafka-protocol traffic (pcap / pcapng) with the generated codecs."""
