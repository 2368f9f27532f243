# The base image can be replaced (deploy/offline/compose.yml builds on a stand-in where Docker Hub is out of reach).
ARG PYTHON_IMAGE=python:3.13-slim
FROM ${PYTHON_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt
COPY . .
# A throwaway key: production settings refuse a missing or published one, even to collect static files.
RUN SECRET_KEY="$(python -c 'import secrets; print(secrets.token_urlsafe(50))')" DEBUG=false python manage.py collectstatic --noinput
RUN useradd --create-home rta && mkdir -p /app/media && chown rta /app/media
USER rta
EXPOSE 8000
CMD ["gunicorn", "-c", "gunicorn.conf.py", "config.wsgi:application", "--bind", "0.0.0.0:8000", "--worker-class", "gthread", "--threads", "32", "--keep-alive", "75", "--timeout", "60"]
