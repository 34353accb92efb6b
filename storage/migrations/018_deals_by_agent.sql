-- list_deals finds an agent's deals through deal_parties (indexed by agent in 012) and through
-- its agreements, which need the same index.
create index deal_agreements_by_agent on deal_agreements (agent_id);
