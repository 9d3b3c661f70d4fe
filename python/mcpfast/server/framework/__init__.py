"""What an author touches: `Server` (a declaration: tools, resources, prompts, skills, apps;
no bus, no nursery), its registry, the handler `Context`, the `Call` a feature sees and the
feature functions that run the handlers. Imports no core, engine, state or ops module."""
