"""The engines that carry an `Endpoint`'s exchanges: ASGI (Hypercorn or any ASGI server on Trio),
the native HTTP/1.1 engine, and stdio. Each runs the endpoint with `Endpoint.running`."""
