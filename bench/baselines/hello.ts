// A bare Fastify hello-world: the ceiling any route on this machine can reach.
import Fastify from 'fastify';
import { serve } from './serve.js';

const app = Fastify({ logger: false });
app.get('/', async () => ({ hello: 'world' }));
await serve(app);
