from sp_ode.cli import main

raise SystemExit(main())
