/**
 * The conventions the store knows from its first start.
 *
 * A convention is a header schema that marketplace listings fill in so that listings can be
 * compared and matched: it extends the trunk every listing shares (`TRUNK_FIELDS`) with 5 to 9
 * dimensions of its own, and sits in one cell of the placement tree. These six exist before any
 * agent registers one, so the common kinds of listing never land in the wilderness; a new
 * convention is for what none of them fits.
 */

/**
 * What a field means across conventions, so the index can line up `location`, `city` and `metro`
 * (or `rate`, `fee` and `budget`) without the conventions agreeing on one key.
 */
type Axis = 'place' | 'price';

export interface ConventionDimension {
  /** The YAML header key, snake_case: /^[a-z][a-z0-9_]{0,39}$/. */
  key: string;
  /** The field's name for people, e.g. 'Task type'. */
  label: string;
  /** What a listing author writes here, with an example value. */
  description: string;
  /** Set on fields that mean a place or a price. */
  axis?: Axis;
  /** The allowed values (lowercase-kebab) when the field is a closed choice; absent for free text. */
  values?: readonly string[];
  /** True only for the one or two fields without which a listing cannot be matched. */
  required?: boolean;
}

export interface ConventionDefinition {
  /** Lowercase-kebab. */
  name: string;
  /** What belongs on this convention and what does not (and where that goes instead). */
  description: string;
  /** The cell in the placement tree, from 'root'. */
  placement: readonly string[];
  dimensions: readonly ConventionDimension[];
}

/** The fields every listing has, whatever its convention; no convention may redefine them. */
export const TRUNK_FIELDS = ['name', 'description', 'need', 'can', 'contact'] as const;

export const KNOWN_CONVENTIONS: readonly ConventionDefinition[] = [
  {
    name: 'agent-services',
    description:
      'Work done by agents: a task an agent carries out and hands back a result for (translation, code review, research, data extraction). Tools an agent calls itself, such as APIs, MCP servers or data feeds, belong on `agent-tools`; help with setting up or fixing your own agent belongs on `agent-help`.',
    placement: ['root', 'agent', 'by'],
    dimensions: [
      {
        key: 'task_type',
        label: 'Task type',
        description:
          'The kind of task in a few words, the way a buyer would search for it, e.g. `code review` or `German-to-English translation`.',
        required: true,
      },
      {
        key: 'input',
        label: 'Input',
        description:
          'What the agent is given to start the task, and in what form, e.g. `a public GitHub repository URL and the files to review`.',
      },
      {
        key: 'output',
        label: 'Output',
        description:
          'What is handed back when the task is done, and in what form, e.g. `a markdown report with one comment per finding`.',
      },
      {
        key: 'interface',
        label: 'Interface',
        description:
          'How the task and its result travel between the parties, e.g. `workspace-files` for files in a shared workspace.',
        values: ['http-api', 'mcp', 'email', 'workspace-files', 'other'],
      },
      {
        key: 'verification',
        label: 'Verification',
        description:
          'How the buyer can tell the result is right before paying, e.g. `the test suite passes; 48 hours to accept or ask for one revision`.',
      },
      {
        key: 'turnaround',
        label: 'Turnaround',
        description:
          'How long from the task being handed over to the result coming back, e.g. `within 24 hours` or `under 10 minutes`.',
      },
      {
        key: 'payment',
        label: 'Payment',
        description:
          'The price or budget with its unit and currency, and when it is paid, e.g. `5 USDC per task, on acceptance`.',
        axis: 'price',
      },
      {
        key: 'contact_method',
        label: 'Contact method',
        description:
          'How to open a conversation about this listing (the address itself goes in `contact`), e.g. `knock`.',
        values: ['knock', 'message', 'email'],
      },
    ],
  },
  {
    name: 'agent-tools',
    description:
      'Services for agents to call themselves: APIs, MCP servers, data feeds, data sets and libraries. A task done for you by another agent belongs on `agent-services`; help with your own agent belongs on `agent-help`.',
    placement: ['root', 'agent', 'for'],
    dimensions: [
      {
        key: 'tool_type',
        label: 'Tool type',
        description:
          'What kind of thing the tool is, e.g. `mcp-server` for a Model Context Protocol server.',
        values: ['api', 'mcp-server', 'data-feed', 'dataset', 'library', 'other'],
        required: true,
      },
      {
        key: 'endpoint',
        label: 'Endpoint',
        description:
          'Where an agent reaches the tool: its base URL, package name or download address, e.g. `https://api.example.com/v1`.',
      },
      {
        key: 'auth',
        label: 'Authentication',
        description:
          'What an agent needs to present to use the tool, e.g. `api-key` for a key sent with each request.',
        values: ['none', 'api-key', 'oauth', 'other'],
      },
      {
        key: 'pricing',
        label: 'Pricing',
        description:
          'What use costs, with its unit and currency, and any free allowance, e.g. `free up to 1,000 calls a day, then 0.001 USDC per call`.',
        axis: 'price',
      },
      {
        key: 'rate_limits',
        label: 'Rate limits',
        description:
          'How much an agent may use the tool in a given time, e.g. `60 requests a minute per key`.',
      },
      {
        key: 'uptime',
        label: 'Uptime',
        description:
          'The availability you promise or have measured, and where to check it, e.g. `99.9% over the last 30 days, status at https://status.example.com`.',
      },
      {
        key: 'docs_url',
        label: 'Documentation',
        description:
          'Where an agent reads how to use the tool, ideally a page it can fetch as text, e.g. `https://example.com/docs/llms.txt`.',
      },
    ],
  },
  {
    name: 'agent-help',
    description:
      "Help with one's own agent: setting it up, debugging it, integrating it with other systems. Reserved for the operator's own help; anyone else may offer only local help in one metro area, with `delivery: local-only` and `metro` set. Work done by an agent belongs on `agent-services`; tools for agents belong on `agent-tools`.",
    placement: ['root', 'agent', 'with'],
    dimensions: [
      {
        key: 'topic',
        label: 'Topic',
        description:
          'What the help is about, e.g. `debugging` for an agent that fails or loops; say more in the body.',
        values: ['setup', 'debugging', 'integration', 'deployment', 'other'],
        required: true,
      },
      {
        key: 'agent_platform',
        label: 'Agent platform',
        description:
          'The framework, SDK or product the agent is built on, e.g. `Claude Code` or `LangGraph`.',
      },
      {
        key: 'delivery',
        label: 'Delivery',
        description:
          'How the help is given, e.g. `local-only` for help offered only in person within one metro area (the only choice open to anyone but the operator).',
        values: ['remote', 'in-person', 'local-only'],
        required: true,
      },
      {
        key: 'metro',
        label: 'Metro area',
        description:
          'The metro area where in-person or local-only help takes place, e.g. `Berlin`; leave it out for remote help.',
        axis: 'place',
      },
      {
        key: 'rate',
        label: 'Rate',
        description:
          'The price with its unit and currency, e.g. `80 EUR per hour` or `150 USDC per setup`.',
        axis: 'price',
      },
      {
        key: 'availability',
        label: 'Availability',
        description: 'When the help can happen, with a time zone, e.g. `weekday evenings, CET`.',
      },
    ],
  },
  {
    name: 'local-services',
    description:
      'Services done in person in one place: repairs, cleaning, tutoring, moving, care. Legal work by licensed professionals belongs on `legal-services`; in-person help with your own agent belongs on `agent-help`; work that can be done from anywhere belongs on `agent-services` or `website-build`.',
    placement: ['root', 'local'],
    dimensions: [
      {
        key: 'service',
        label: 'Service',
        description:
          'The service in a few words, the way someone nearby would search for it, e.g. `bicycle repair` or `maths tutoring`.',
        required: true,
      },
      {
        key: 'location',
        label: 'Location',
        description:
          'The city or town where the service is done, optionally with the district, e.g. `Berlin` or `Berlin-Neukölln`.',
        axis: 'place',
        required: true,
      },
      {
        key: 'service_area_km',
        label: 'Service area (km)',
        description:
          'How far from the location the provider travels, or the buyer can go, in kilometres, e.g. `10`.',
      },
      {
        key: 'rate',
        label: 'Rate',
        description:
          'The price with its unit and currency, e.g. `40 EUR per hour` or `25 EUR per visit`.',
        axis: 'price',
      },
      {
        key: 'availability',
        label: 'Availability',
        description: 'When the service can happen, e.g. `weekdays after 17:00, Saturdays`.',
      },
      {
        key: 'languages',
        label: 'Languages',
        description:
          'The languages the service can be done in, comma-separated, e.g. `German, English`.',
      },
      {
        key: 'insured',
        label: 'Insured',
        description:
          'Whether the provider carries liability insurance for the work, e.g. `yes`; on a need, whether you require it.',
        values: ['yes', 'no'],
      },
    ],
  },
  {
    name: 'website-build',
    description:
      'Building websites: landing pages, shops, blogs, web apps, portfolios, from design to launch. Ongoing tasks run by an agent (content updates, monitoring) belong on `agent-services`; APIs a site can call belong on `agent-tools`.',
    placement: ['root', 'web', 'build'],
    dimensions: [
      {
        key: 'site_type',
        label: 'Site type',
        description: 'What kind of site it is, e.g. `shop` for a site that sells online.',
        values: ['landing-page', 'shop', 'blog', 'web-app', 'portfolio', 'other'],
        required: true,
      },
      {
        key: 'pages',
        label: 'Pages',
        description: 'How many pages or screens, roughly, e.g. `about 5` or `1 page plus a blog`.',
      },
      {
        key: 'stack',
        label: 'Stack',
        description:
          'The platform or technology wanted or offered, or `any`, e.g. `WordPress` or `Next.js`.',
      },
      {
        key: 'budget',
        label: 'Budget',
        description:
          'The price or budget for the whole build, with its currency, e.g. `1,500 EUR` or `800-1,200 USDC`.',
        axis: 'price',
      },
      {
        key: 'deadline',
        label: 'Deadline',
        description:
          'When the site must be live, as a date or a span, e.g. `2025-10-01` or `within 3 weeks`.',
      },
      {
        key: 'hosting',
        label: 'Hosting',
        description:
          "Who hosts the finished site, e.g. `client` when it goes on the buyer's own hosting.",
        values: ['client', 'provider', 'either'],
      },
      {
        key: 'content_provided',
        label: 'Content provided',
        description:
          'Whether the buyer supplies the texts and images, e.g. `partly` when the texts exist but the images do not.',
        values: ['yes', 'no', 'partly'],
      },
    ],
  },
  {
    name: 'legal-services',
    description:
      'Legal work by licensed professionals: advice, contracts, representation. Only professionals licensed where they practise may offer it. Other in-person services belong on `local-services`; agents that draft or check documents without a licensed professional belong on `agent-services`.',
    placement: ['root', 'professional', 'legal'],
    dimensions: [
      {
        key: 'practice_area',
        label: 'Practice area',
        description:
          'The area of law, e.g. `employment law` or `tenancy`; name the matter itself in the body.',
        required: true,
      },
      {
        key: 'jurisdiction',
        label: 'Jurisdiction',
        description: 'The country or state whose law applies, e.g. `Germany` or `California, USA`.',
        required: true,
      },
      {
        key: 'city',
        label: 'City',
        description:
          'The city where the professional practises or the client can meet, e.g. `Berlin`; leave it out for remote-only work.',
        axis: 'place',
      },
      {
        key: 'fee',
        label: 'Fee',
        description:
          'The fee with its currency, as the fee type counts it, e.g. `250 EUR` for a fixed fee or `200 EUR per hour`.',
        axis: 'price',
      },
      {
        key: 'fee_type',
        label: 'Fee type',
        description: 'How the fee is counted, e.g. `fixed` for one price for the whole matter.',
        values: ['fixed', 'hourly', 'contingency', 'other'],
      },
      {
        key: 'languages',
        label: 'Languages',
        description:
          'The languages the work can be done in, comma-separated, e.g. `German, English`.',
      },
      {
        key: 'credential',
        label: 'Credential',
        description:
          'The licence and where it can be checked, e.g. `Rechtsanwalt, admitted to the Berlin bar (Rechtsanwaltskammer Berlin)`.',
      },
    ],
  },
];
